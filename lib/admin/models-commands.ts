import { BEDROCK_CATALOG, catalogIds, lookUpModel, regionProblem } from '#shared/bedrock-catalog.ts';
import { defaultBedrockModels } from '#lib/cdk/bedrock-models.ts';
import { loadPriceSheet, modelPriceOf } from '#lib/pricing/price-sheet.ts';
import { UsageError } from './usage-error.ts';

const REGION = /^[a-z]{2}(-[a-z]+)+-\d$/;

/**
 * Every id a workflow may name (foundation models and inference profiles), with its lifecycle state today, whether
 * a deployment in `region` allows it by default and can call it at all, its price from the price sheet (`null` where
 * the sheet has none), and where its lifecycle facts were read and when. A model with an end of life names its
 * `replacement`, or, when the catalog holds none of its kind, `instead` says what to do. The region is the one a
 * deploy would use (`--region`, else AWS_REGION as the CDK CLI reads it, else the CLI's own default us-east-1).
 */
export function runModelsCommand(args: string[], now: number, regionFlag?: string | boolean) {
  if (args.length > 1 || (args[0] !== undefined && args[0] !== 'list')) throw new UsageError(`unknown models command ${args.join(' ')}`);
  const region = typeof regionFlag === 'string' ? regionFlag : (process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1');
  if (!REGION.test(region)) throw new UsageError(`--region ${JSON.stringify(region)} is not an AWS region name (e.g. eu-central-1)`);
  let allowedByDefault: string[] = [];
  let regionNote: string | null = null;
  try {
    allowedByDefault = defaultBedrockModels(region);
  } catch (error) {
    regionNote = (error as Error).message;
  }
  const sheet = loadPriceSheet();
  const models = catalogIds(BEDROCK_CATALOG).map((id) => {
    const { model, state } = lookUpModel(id, now)!;
    const price = modelPriceOf(sheet, id);
    return {
      id,
      kind: model.kind,
      provider: model.provider,
      state,
      end_of_life: model.endOfLife ?? null,
      replacement: model.replacement && 'model' in model.replacement ? model.replacement.model : null,
      instead: model.replacement && 'none' in model.replacement ? model.replacement.none : null,
      allowed_by_default: allowedByDefault.includes(id),
      callable_from_region: regionProblem(id, region) === undefined,
      marketplace_subscription: model.marketplaceProductId !== undefined,
      price: price ? { ...price } : null,
      checked: { ...model.checked },
    };
  });
  return { region: sheet.region, deploy_region: region, deploy_region_note: regionNote, price_sheet_date: sheet.date, models };
}

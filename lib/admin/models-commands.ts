import { BEDROCK_CATALOG, catalogIds, lookUpModel } from '#shared/bedrock-catalog.ts';
import { DEFAULT_BEDROCK_MODELS } from '#lib/cdk/bedrock-models.ts';
import { loadPriceSheet, modelPriceOf } from '#lib/pricing/price-sheet.ts';
import { UsageError } from './usage-error.ts';

/**
 * Every id a workflow may name (foundation models and inference profiles), with its lifecycle state today, whether
 * a deployment allows it by default, and its price from the price sheet (`null` where the sheet has none). A model
 * with an end of life names its `replacement`, or, when the catalog holds none of its kind, `instead` says what
 * to do.
 */
export function runModelsCommand(args: string[], now: number) {
  if (args.length > 1 || (args[0] !== undefined && args[0] !== 'list')) throw new UsageError(`unknown models command ${args.join(' ')}`);
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
      allowed_by_default: DEFAULT_BEDROCK_MODELS.includes(id),
      marketplace_subscription: model.marketplaceProductId !== undefined,
      price: price ? { ...price } : null,
    };
  });
  return { region: sheet.region, price_sheet_date: sheet.date, models };
}

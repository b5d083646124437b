import { lookUpModel } from '#shared/bedrock-catalog.ts';
import { loadPriceSheet, modelCostOf, type PriceSheet } from '#lib/pricing/price-sheet.ts';
import {
  CheckFailure,
  MODEL_CHECK_MAX_TOKENS,
  type CheckOutcome,
  type CheckStatus,
  type VerifyCheck,
  type VerifyContext,
} from './verify-check.ts';

/** What one model's call came to. */
export interface ModelCall {
  model: string;
  profile_arn: string;
  status: Extract<CheckStatus, 'pass' | 'fail' | 'warn'>;
  input_tokens: number | null;
  output_tokens: number | null;
  /** What the call cost by the price sheet; null when the sheet has no price for it (or no sheet for the region). */
  usd: number | null;
  /** The line the report shows for it. */
  detail: string;
  error?: string;
}

/** The prompt: one word, the least a model can be asked. */
export const PROMPT = 'Hi';

/** The deployment's allow-list (model id → its application inference profile's ARN), or the failure saying why none. */
export function deploymentProfiles(context: VerifyContext): Record<string, string> {
  const profiles = context.services.inferenceProfiles;
  if (profiles) return profiles;
  throw new CheckFailure(
    "the deployment's Bedrock inference profiles (model id → ARN)",
    context.services.missing ?? 'none',
    'Deploy this version (npx cdk deploy), then verify again',
  );
}

/**
 * `models`: each model of the deployment's allow-list answers one minimal ConverseStream call through its application
 * inference profile (as the step function calls it), with what it cost from the price sheet `cost report` uses. A
 * refusal is explained from Bedrock's own error name and message, in what the operator does about it.
 */
export const modelsCheck: VerifyCheck = {
  name: 'models',
  async run(context): Promise<CheckOutcome> {
    const profiles = deploymentProfiles(context);
    const sheet = priceSheet(context.services.region);
    const calls: ModelCall[] = [];
    for (const [model, arn] of Object.entries(profiles)) {
      context.status(`models: ${model}`);
      calls.push(await callModel(context, model, arn, sheet));
      if (context.signal.aborted) throw context.signal.reason;
    }
    const total = calls.reduce((sum, call) => sum + (call.usd ?? 0), 0);
    const status = calls.some((call) => call.status === 'fail') ? 'fail' : calls.some((call) => call.status === 'warn') ? 'warn' : 'pass';
    const answeredCount = calls.filter((call) => call.status === 'pass').length;
    const region = context.services.region;
    const noSheet = sheet ? '' : ` (no price sheet for ${region}: add lib/pricing/${region}.json)`;
    const summary = `${answeredCount} of ${calls.length} models answered through their profiles, ${usdText(total)} in all${noSheet}`;
    // Refusals first, where the eye lands; then the models that answered.
    const lines = [...calls.filter((call) => call.status !== 'pass'), ...calls.filter((call) => call.status === 'pass')].map(
      (call) => call.detail,
    );
    return { status, detail: [summary, ...lines].join('\n'), models: calls, usd: sheet ? roundUsd(total) : null };
  },
};

function priceSheet(region: string): PriceSheet | undefined {
  try {
    return loadPriceSheet(region);
  } catch {
    return undefined;
  }
}

async function callModel(context: VerifyContext, model: string, profileArn: string, sheet: PriceSheet | undefined): Promise<ModelCall> {
  const { ConverseStreamCommand } = await import('@aws-sdk/client-bedrock-runtime');
  const call = { model, profile_arn: profileArn, input_tokens: null, output_tokens: null, usd: null };
  let usage: { inputTokens?: number; outputTokens?: number } | undefined;
  try {
    const answer = await context.services.bedrock.send(
      new ConverseStreamCommand({
        modelId: profileArn,
        messages: [{ role: 'user', content: [{ text: PROMPT }] }],
        inferenceConfig: { maxTokens: MODEL_CHECK_MAX_TOKENS },
      }),
      { abortSignal: context.signal },
    );
    // Refusals can come inside the stream too (throttling, a model error), as exceptions the SDK throws here.
    for await (const event of answer.stream ?? []) usage = event.metadata?.usage ?? usage;
  } catch (error) {
    if (context.signal.aborted) throw context.signal.reason;
    const explained = refusalExplanation(model, { name: (error as Error).name, message: (error as Error).message }, context.now());
    return { ...call, ...explained, error: `${(error as Error).name}: ${(error as Error).message}` };
  }
  const input = usage?.inputTokens ?? 0;
  const output = usage?.outputTokens ?? 0;
  const cost = sheet ? modelCostOf(sheet, model, { input_tokens: input, output_tokens: output }) : undefined;
  const usd = cost?.priced ? roundUsd(cost.tokens_usd) : null;
  return {
    ...call,
    status: 'pass',
    input_tokens: input,
    output_tokens: output,
    usd,
    detail:
      `${model}: answered, ${input} tokens in and ${output} out, ` +
      `${usd === null ? 'not priced (the price sheet has no price for it)' : usdText(usd)}`,
  };
}

/** Dollars to a millionth of a cent: no float noise (0.000010800000000000002) in the JSON. */
const roundUsd = (usd: number) => Number(usd.toFixed(12));

/** A few millionths of a dollar, as written: `$0.0000042`, never `4.2e-6`. */
export function usdText(usd: number): string {
  if (usd === 0) return '$0';
  const digits = Math.max(2, 1 - Math.floor(Math.log10(usd)));
  return `$${usd.toFixed(Math.min(digits, 12)).replace(/(\.\d*?[1-9])0+$/, '$1')}`;
}

/**
 * What a Bedrock refusal means for the operator, from its error name and message: a line saying what came back and
 * what to do, and whether it fails the check (a throttled call is a warning: nothing is wrong with the deployment).
 */
export function refusalExplanation(
  model: string,
  error: { name: string; message: string },
  now: number,
): { status: 'fail' | 'warn'; detail: string } {
  const got = `${model}: expected an answer through its inference profile; got ${error.name}: ${error.message.trim()}`;
  const fail = (todo: string) => ({ status: 'fail' as const, detail: `${got} -> ${todo}` });
  const { name, message } = error;
  if (name === 'AccessDeniedException' && /AWS Marketplace/i.test(message)) {
    return fail(
      'the model needs its one-time AWS Marketplace subscription, which the first call makes: give the caller (your operator role, ' +
        'and the step function, which the stack grants) ' +
        'aws-marketplace:Subscribe, aws-marketplace:Unsubscribe and aws-marketplace:ViewSubscriptions; if it has them, the ' +
        'subscription is still being processed: retry in 2-15 minutes',
    );
  }
  if (name === 'ResourceNotFoundException' && /use case details/i.test(message)) {
    return fail(
      "submit Anthropic's use-case form once for this account (aws bedrock put-use-case-for-model-access, or the Bedrock console's " +
        'model catalog), then retry after 15 minutes',
    );
  }
  if (name === 'ResourceNotFoundException' && /end of its life|marked by provider as Legacy/i.test(message)) {
    return fail(`the model is Legacy or past its end of life on Bedrock: ${replacementOf(model, now)}`);
  }
  if (name === 'ValidationException' && /on-demand throughput isn.t supported/i.test(message)) {
    return fail(
      'a region/profile problem: in this region Bedrock serves the model only through a cross-region inference profile; allow its ' +
        'profile id (us.<model>, eu.<model>, ...) in -c bedrockModels instead and redeploy',
    );
  }
  if (
    name === 'ValidationException' &&
    /model identifier is invalid|not (available|supported) in (this|the) region|isn.t supported in this region|region/i.test(message)
  ) {
    return fail(
      'a region/profile problem: the model or its profile is not served in this region: deploy in a region that serves it (see the ' +
        "Bedrock console's model catalog), or drop it from -c bedrockModels and redeploy",
    );
  }
  if (name === 'AccessDeniedException') {
    return fail(
      'the credentials verify runs with may not call the model through its profile: allow them bedrock:InvokeModelWithResponseStream ' +
        'on the profile and on the model (or cross-region profile) it copies, as the stack allows the step function',
    );
  }
  if (name === 'ThrottlingException' || name === 'ServiceQuotaExceededException' || name === 'TooManyRequestsException') {
    return {
      status: 'warn',
      detail:
        `${got} -> throttled: nothing is wrong with the deployment; verify again later (a quota too small for your traffic is raised ` +
        `in Service Quotas, Amazon Bedrock)`,
    };
  }
  return fail("see the message; the Bedrock console shows the model's access and the account's quotas");
}

/** What to move to from a Legacy or ended model: the catalog's replacement, or what to do without one. */
function replacementOf(model: string, now: number): string {
  const replacement = lookUpModel(model, now)?.model.replacement;
  if (!replacement) return 'choose an active model (npm run --silent admin -- models) for -c bedrockModels and redeploy';
  if ('model' in replacement) return `move to ${replacement.model} (in -c bedrockModels and in the workflows that name it) and redeploy`;
  return replacement.none;
}

import { routePath } from '#functions/routes.ts';
import { lookUpModel } from '#shared/bedrock-catalog.ts';
import { parseDefinition } from '#workflows/definition-validation.ts';
import { createPublicationsRepository } from '#workflows/publications-repository.ts';
import { publish, unpublish } from '#workflows/publication-service.ts';
import { isInferenceProfile, profileSourceArn } from '#lib/cdk/bedrock-models.ts';
import { loadPriceSheet, modelCostOf, type PriceSheet } from '#lib/pricing/price-sheet.ts';
import { CheckFailure, MODEL_CHECK_MAX_TOKENS, type CheckOutcome, type VerifyCheck, type VerifyContext } from './verify-check.ts';
import { answered, readEventStream, UNINTERRUPTED, unreachable, type StreamedEvent } from './verify-http.ts';
import { deploymentProfiles, PROMPT, refusalExplanation, usdText, type ModelCall } from './verify-models.ts';
import { authorized, VERIFY_USER_ID, type AuthorizedApi } from './verify-workflow.ts';

/** Which kind of source an application inference profile copies: the two cases IAM may see differently. */
type ProfileSource = 'foundation model' | 'cross-region profile';

/** One model the step function's role is asked to call, and the profile it goes through. */
export interface StepModelProbe {
  model: string;
  profileArn: string;
  copies: ProfileSource;
}

/** What one probe's execution came to. */
interface StepModelCall extends ModelCall {
  copies: ProfileSource;
  execution_id: string | null;
}
/** What a prompt of one word comes to with the Converse framing, to rank the models by the price of one probe. */
const PROBE_INPUT_TOKENS = 10;
/** How often a stream cut before its end is resumed before the check gives up. */
const MAX_RESUMES = 4;

const FIX_WORKFLOWS =
  'The Published Workflow API does not answer as its OpenAPI document says: deploy this version (npx cdk deploy; locally restart npm ' +
  'start) and verify again';

/**
 * The models to call: the cheapest text model (by the price sheet, then the list's order) whose profile copies a foundation
 * model, and the cheapest whose profile copies a cross-region profile. IAM authorizes a call through an application profile
 * on the profile and on what it copies, with `bedrock:InferenceProfileArn` in the request; AWS documents that key for a
 * call through a profile, not which ARN it carries when the application profile copies a cross-region one. The step
 * function's role relies on it being the application profile's, so both kinds are proven, each at the price of a few tokens.
 */
export function stepModelProbes(profiles: Record<string, string>, sheet: PriceSheet | undefined, now: number): StepModelProbe[] {
  const price = (model: string) => {
    const cost = sheet ? modelCostOf(sheet, model, { input_tokens: PROBE_INPUT_TOKENS, output_tokens: MODEL_CHECK_MAX_TOKENS }) : undefined;
    return cost?.priced ? cost.tokens_usd : Number.POSITIVE_INFINITY;
  };
  const text = Object.entries(profiles).filter(([model]) => lookUpModel(model, now)?.model.kind === 'text');
  const probes: StepModelProbe[] = [];
  for (const copies of ['foundation model', 'cross-region profile'] as const) {
    const ofKind = text.filter(([model]) => isInferenceProfile(model) === (copies === 'cross-region profile'));
    // A stable sort: equal prices keep the allow-list's order.
    const [cheapest] = [...ofKind].sort(([a], [b]) => price(a) - price(b));
    if (cheapest) probes.push({ model: cheapest[0], profileArn: cheapest[1], copies });
  }
  return probes;
}

/** The one-node workflow that calls `probe.model` as any published workflow does: through the step function. */
function probeWorkflow(probe: StepModelProbe, index: number) {
  return {
    id: `admin-verify-step-model-${index + 1}`,
    name: `admin verify: the step function calls ${probe.model}`,
    description: 'Published by `admin verify` in a project of its own, and unpublished again',
    start: 'ask',
    nodes: {
      ask: { type: 'llm', provider: 'bedrock', model_id: probe.model, prompt: PROMPT, max_tokens: MODEL_CHECK_MAX_TOKENS, next: 'done' },
      done: { type: 'end', output: '{{nodes.ask.output}}' },
    },
  };
}

/**
 * `step-model`: proves the workflow step function's own role may call its models, which neither the `models` check (the
 * operator's credentials) nor the `workflow` check (the scripted provider) can. In the temporary project it publishes a
 * one-node workflow per probe (`stepModelProbes`), runs each through the API with a one-word prompt and at most
 * MODEL_CHECK_MAX_TOKENS out, and reads the execution's usage from its `complete` event. A refusal is explained from the
 * execution's error: the role's `bedrock:InferenceProfileArn` condition, the Marketplace subscription of a third-party
 * model's first call, Anthropic's use-case form.
 */
export const stepModelCheck: VerifyCheck = {
  name: 'step-model',
  async run(context): Promise<CheckOutcome> {
    const profiles = deploymentProfiles(context);
    const sheet = priceSheet(context.services.region);
    const probes = stepModelProbes(profiles, sheet, context.now());
    if (probes.length === 0) return { status: 'skip', detail: 'the allow-list holds no text model to call', calls: [] };
    const { projectId } = context.project;
    const deps = {
      publications: createPublicationsRepository(context.target.dynamo, context.target.tables.publications),
      now: context.now,
    };
    const definitions = probes.map((probe, index) => {
      const workflow = probeWorkflow(probe, index);
      return parseDefinition(workflow, `${workflow.id}.json`, { allowLoopbackTools: false, now: context.now() });
    });
    context.status(`step-model: publishing ${definitions.length} one-node workflows in project ${projectId}`);
    await publish(deps, projectId, definitions);
    context.cleanup.add(
      `the step-model publication of project ${projectId}`,
      async () => void (await unpublish(deps, projectId)),
      `npm run --silent admin -- unpublish --project ${projectId}${context.adminFlags}`,
    );
    const api = authorized(context, await context.project.key());
    const calls: StepModelCall[] = [];
    for (const [index, probe] of probes.entries()) {
      context.status(`step-model: the step function calls ${probe.model}`);
      const { executionId, complete } = await runToComplete(context, api, definitions[index]!.id);
      calls.push(callOutcome(probe, executionId, complete, profiles, sheet, context.now()));
    }
    const status = calls.some((call) => call.status === 'fail') ? 'fail' : calls.some((call) => call.status === 'warn') ? 'warn' : 'pass';
    const passed = calls.filter((call) => call.status === 'pass').length;
    const summary =
      `${passed} of ${calls.length} models answered the workflow step function, each through its application inference profile ` +
      `with the function's own role (project ${projectId})`;
    const lines = [...calls.filter((call) => call.status !== 'pass'), ...calls.filter((call) => call.status === 'pass')].map(
      (call) => call.detail,
    );
    return { status, detail: [summary, ...lines].join('\n'), calls };
  },
};

function priceSheet(region: string): PriceSheet | undefined {
  try {
    return loadPriceSheet(region);
  } catch {
    return undefined;
  }
}

/** The final `complete` event of an execution, as its stream sends it. */
interface Complete {
  status?: unknown;
  error?: unknown;
  usage?: { input_tokens?: unknown; output_tokens?: unknown };
}

/**
 * Runs a workflow streamed and reads its events to the final `complete`, resuming with `Last-Event-ID` when the stream
 * ends before it (a gateway's cut). The execution is ended at cleanup if the check stops before it did.
 */
async function runToComplete(
  context: VerifyContext,
  api: AuthorizedApi,
  workflowId: string,
): Promise<{ executionId: string; complete: Complete }> {
  const start = routePath('PublishedStreamWorkflow', { workflow_id: workflowId });
  const body = { user_id: VERIFY_USER_ID, input: { message: PROMPT } };
  const drop = new AbortController();
  let response: Response;
  try {
    // Not cut by an interrupt until its headers name the execution, which the cleanup then ends.
    response = await api.open(start, { method: 'POST', body }, drop.signal, UNINTERRUPTED);
  } catch (error) {
    throw unreachable(context, 'POST', start, error);
  }
  const executionId = response.headers.get('x-execution-id');
  if (executionId) api.started(executionId);
  // From here an interrupt drops the connection like any other read.
  context.signal.addEventListener('abort', () => drop.abort(), { once: true });
  if (context.signal.aborted) drop.abort();
  context.signal.throwIfAborted();
  if (response.status !== 200 || !executionId) {
    const text = await response.text().catch(() => '');
    throw new CheckFailure(
      `POST ${start} to answer 200 text/event-stream with X-Execution-Id`,
      answered({ status: response.status, text }),
      FIX_WORKFLOWS,
    );
  }
  let last = 0;
  let complete: Complete | undefined;
  const take = (event: StreamedEvent): 'stop' | void => {
    if (event.id === undefined) return;
    last = event.id;
    if (event.event !== 'complete') return;
    const data = JSON.parse(event.data) as Complete;
    if (data.status === 'completed' || data.status === 'failed' || data.status === 'cancelled') {
      complete = data;
      return 'stop';
    }
  };
  let path = start;
  for (let resumes = 0; ; resumes += 1) {
    try {
      await readEventStream(response, take);
    } catch (error) {
      throw unreachable(context, path === start ? 'POST' : 'GET', path, error);
    }
    if (complete) return { executionId, complete };
    if (resumes >= MAX_RESUMES)
      throw new CheckFailure(`the execution ${executionId} to end`, `events up to ${last} after ${resumes} resumes`, FIX_WORKFLOWS);
    path = routePath('PublishedStreamExecution', { execution_id: executionId });
    try {
      response = await api.open(path, { headers: { 'last-event-id': String(last) } }, new AbortController().signal);
    } catch (error) {
      throw unreachable(context, 'GET', path, error);
    }
    if (response.status !== 200) {
      const text = await response.text().catch(() => '');
      throw new CheckFailure(
        `GET ${path} to answer 200 with the events after ${last}`,
        answered({ status: response.status, text }),
        FIX_WORKFLOWS,
      );
    }
  }
}

function callOutcome(
  probe: StepModelProbe,
  executionId: string,
  complete: Complete,
  profiles: Record<string, string>,
  sheet: PriceSheet | undefined,
  now: number,
): StepModelCall {
  const call = { model: probe.model, profile_arn: probe.profileArn, copies: probe.copies, execution_id: executionId };
  if (complete.status !== 'completed') {
    const error = typeof complete.error === 'string' ? complete.error : `the execution ended ${String(complete.status)}`;
    return { ...call, input_tokens: null, output_tokens: null, usd: null, ...stepRoleRefusal(probe, error, profiles, now), error };
  }
  const input = Number(complete.usage?.input_tokens ?? 0);
  const output = Number(complete.usage?.output_tokens ?? 0);
  const cost = sheet ? modelCostOf(sheet, probe.model, { input_tokens: input, output_tokens: output }) : undefined;
  const usd = cost?.priced ? Number(cost.tokens_usd.toFixed(12)) : null;
  return {
    ...call,
    status: 'pass',
    input_tokens: input,
    output_tokens: output,
    usd,
    detail:
      `${probe.model} (its profile copies a ${probe.copies}): answered the step function, ${input} tokens in and ${output} out, ` +
      `${usd === null ? 'not priced (the price sheet has no price for it)' : usdText(usd)}`,
  };
}

/** `Execution error (AccessDeniedException): …`, as the state machine records a step's failure; a throttle arrives wrapped. */
function errorOf(text: string): { name: string; message: string } | undefined {
  const match = /^Execution error \(([^)]+)\): ([\s\S]*)$/.exec(text);
  if (!match) return undefined;
  const wrapped = match[1] === 'TransientServiceError' ? /^(\w+): ([\s\S]*)$/.exec(match[2]!) : null;
  return wrapped ? { name: wrapped[1]!, message: wrapped[2]! } : { name: match[1]!, message: match[2]! };
}

/** IAM's refusal: who was refused which action on what. */
const IAM_DENIAL = /assumed-role\/([^/\s]+)\/\S+ is not authorized to perform: (\S+) on resource: (\S+)/;

/**
 * What the step function's failed call means for the operator, from the execution's error. IAM's own refusal names the
 * resource: on the profile, the role lacks its grant; on what the profile copies, the role's `bedrock:InferenceProfileArn`
 * condition did not hold, which names the profile the call named and the ARNs the stack writes into the condition. The
 * Marketplace and use-case refusals, and the rest (Legacy, region, throttling), are explained as the `models` check does.
 */
export function stepRoleRefusal(
  probe: StepModelProbe,
  error: string,
  profiles: Record<string, string>,
  now: number,
): { status: 'fail' | 'warn'; detail: string } {
  const got =
    `${probe.model} (its profile copies a ${probe.copies}): expected the step function to get an answer through ` +
    `${probe.profileArn}; got ${error.trim()}`;
  const fail = (todo: string) => ({ status: 'fail' as const, detail: `${got} -> ${todo}` });
  const parsed = errorOf(error);
  if (!parsed) return fail("see the message; the workflow step function's log has the whole error");
  if (parsed.name === 'AccessDeniedException') {
    if (/AWS Marketplace/i.test(parsed.message))
      return fail(
        "the model's one-time AWS Marketplace subscription, which an account's first call to a Claude or other third-party model makes " +
          "with the caller's role: the stack grants the step function aws-marketplace:Subscribe, aws-marketplace:Unsubscribe and " +
          'aws-marketplace:ViewSubscriptions when Bedrock calls them (aws:CalledViaLast); if a permissions boundary or an SCP denies ' +
          'them, allow them; else the subscription is still being processed: retry in 2-15 minutes',
      );
    const denial = IAM_DENIAL.exec(parsed.message);
    if (denial) return fail(conditionTodo(probe, profiles, { role: denial[1]!, action: denial[2]!, resource: denial[3]! }));
    return fail(
      "the likely causes: the role's bedrock:InferenceProfileArn condition (see the role's policy), the Marketplace actions of an " +
        "account's first call to a third-party model, or Anthropic's use-case form (aws bedrock put-use-case-for-model-access)",
    );
  }
  const explained = refusalExplanation(probe.model, parsed, now);
  return { status: explained.status, detail: `${got} -> ${explained.detail.replace(/^.*? -> /, '')}` };
}

function conditionTodo(
  probe: StepModelProbe,
  profiles: Record<string, string>,
  denied: { role: string; action: string; resource: string },
): string {
  const policy = `aws iam list-role-policies --role-name ${denied.role}, then aws iam get-role-policy`;
  if (denied.resource === probe.profileArn)
    return (
      `the role ${denied.role} has no ${denied.action} on the profile itself (${policy} shows its grants): deploy this version ` +
      '(npx cdk deploy)'
    );
  const [, partition = 'aws', region = '', account = ''] = /^arn:([^:]+):bedrock:([^:]*):([^:]*):/.exec(probe.profileArn) ?? [];
  const listed = Object.values(profiles);
  const otherArn =
    probe.copies === 'cross-region profile'
      ? 'most likely the cross-region profile the application profile copies ' +
        `(${profileSourceArn(probe.model, { partition, region, account })}), which AWS leaves open: then no role can hold a ` +
        'cross-region model to its application profile; allow only models whose profiles copy a foundation model ' +
        '(-c bedrockModels=<ids without us./eu./apac./global.>) and redeploy'
      : 'not the profile the call named, as AWS documents it: raise it with AWS Support, quoting this line';
  return (
    `the role ${denied.role} was refused ${denied.action} on ${denied.resource}, which the profile copies. The role allows what the ` +
    'profiles copy only when bedrock:InferenceProfileArn is one of the ARNs its condition lists, which the stack writes as the ' +
    `deployment's ${listed.length} application profiles (${listed.join(', ')}); this call named ${probe.profileArn}. Read the ` +
    `role's condition (${policy}): if it lacks that ARN, deploy this version (npx cdk deploy); if it lists it, Bedrock carried ` +
    `another ARN in the key, ${otherArn}`
  );
}

import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Counts the pay-per-request units one invocation spends, so finance can see them per request in metrics and per
 * project or link in the daily usage items (usage-meter.ts). AsyncLocalStorage keeps concurrent requests apart on
 * the local server, where one process serves them all.
 */
export interface CostUnits {
  dynamoReadUnits: number;
  dynamoWriteUnits: number;
  s3WriteRequests: number;
  s3ReadRequests: number;
  /** Step Functions API calls (start, stop, task responses): free for Standard workflows, counted for the record. */
  stepFunctionsRequests: number;
  /** REST API requests: the Published Workflow API's (one each). */
  apiRequests: number;
  /**
   * HTTP API requests: the webhook API's, metered in 512 KB increments (a request or answer over 512 KB counts as one
   * per 512 KB begun; aws.amazon.com/api-gateway/pricing).
   */
  httpApiRequests: number;
  lambdaInvocations: number;
  /** Billed duration (rounded up to the millisecond) × configured memory, in GB-milliseconds. */
  lambdaGbMs: number;
  /** Step Functions Standard state transitions the invocation's state machine steps took. */
  stateTransitions: number;
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  toolCalls: number;
  images: number;
  callbackDeliveries: number;
  /** Bytes put to DynamoDB (1 KB per write unit of a new item, an upper bound): what its storage and backups bill on. */
  storedBytes: number;
  /** Bytes of the objects put to S3 (bodies, recordings, hand-offs): what S3 storage bills on. */
  s3StoredBytes: number;
  /** Bytes the invocation wrote to its log (CloudWatch Logs bills ingestion per GB). */
  logBytes: number;
  /**
   * Bytes of the API responses the invocation sent (data transfer out to the internet, billed per GB): status line,
   * headers and body as the client receives them, API Gateway's own headers estimated (data-transfer-meter.ts).
   */
  dataTransferOutBytes: number;
  /** Events put on an EventBridge bus (the collection's hand-offs). */
  eventBridgeEvents: number;
  /** Webhook events accepted (the denominator of the cost per million events). */
  webhookEvents: number;
  /** Workflow runs that finished (the denominator of the cost per run). */
  runsFinished: number;
}

export const COST_UNIT_NAMES = [
  'dynamoReadUnits',
  'dynamoWriteUnits',
  's3WriteRequests',
  's3ReadRequests',
  'stepFunctionsRequests',
  'apiRequests',
  'httpApiRequests',
  'lambdaInvocations',
  'lambdaGbMs',
  'stateTransitions',
  'modelCalls',
  'inputTokens',
  'outputTokens',
  'toolCalls',
  'images',
  'callbackDeliveries',
  'storedBytes',
  's3StoredBytes',
  'logBytes',
  'dataTransferOutBytes',
  'eventBridgeEvents',
  'webhookEvents',
  'runsFinished',
] as const satisfies readonly (keyof CostUnits)[];

/**
 * What each model did, by its LOGICAL id (the id a workflow names: a foundation model, a cross-region profile such as
 * `us.<id>`, or `scripted` for the offline providers), never the ARN a call may be routed through: the id is the
 * price key. Tokens as the model reports them (Bedrock's `inputTokens` leaves out the cache reads and writes) and
 * images by quality and size class (`1024`: up to 1024 x 1024 pixels, `2048`: up to 2048 x 2048). Only counters
 * that moved are present.
 */
export const MODEL_COUNTER_NAMES = [
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'images_standard_1024',
  'images_standard_2048',
  'images_premium_1024',
  'images_premium_2048',
] as const;
export type ModelCounterName = (typeof MODEL_COUNTER_NAMES)[number];
export type ModelCounters = Partial<Record<ModelCounterName, number>>;
/** Model id → its counters (a null-prototype map: ids come from definitions and stored items). */
export type ModelUsage = Record<string, ModelCounters>;
/** The offline providers (scripted llm, agent and image nodes): a model key of its own, priced at $0. */
export const SCRIPTED_MODEL = 'scripted';
export type ImageQuality = 'standard' | 'premium';

/** An image's counter: Nova Canvas prices by quality and by size class, "up to 1024 x 1024" or "up to 2048 x 2048" pixels. */
export function imageCounter(width: number, height: number, quality: ImageQuality = 'standard'): ModelCounterName {
  return `images_${quality}_${width * height <= 1024 * 1024 ? '1024' : '2048'}`;
}

export function emptyModelUsage(): ModelUsage {
  return Object.create(null) as ModelUsage;
}

/** Adds `counters` to `usage[modelId]` in place; a counter (and a model) that comes to zero is left out. */
export function countModel(usage: ModelUsage, modelId: string, counters: ModelCounters): void {
  for (const name of MODEL_COUNTER_NAMES) {
    const value = Number(counters[name] ?? 0);
    if (value === 0 || !Number.isFinite(value)) continue;
    const entry = Object.hasOwn(usage, modelId) ? usage[modelId]! : (usage[modelId] = {});
    const sum = (entry[name] ?? 0) + value;
    if (sum === 0) delete entry[name];
    else entry[name] = sum;
    if (Object.keys(entry).length === 0) delete usage[modelId];
  }
}

/** `a` plus `b` (either may be missing), as a new map. */
export function addModelUsage(a: ModelUsage | undefined, b: ModelUsage | undefined): ModelUsage {
  const sum = emptyModelUsage();
  for (const usage of [a, b]) for (const modelId of Object.keys(usage ?? {})) countModel(sum, modelId, usage![modelId]!);
  return sum;
}

/** `a` minus `b`, counter by counter: what an execution's models did since `b` was its usage. */
export function subtractModelUsage(a: ModelUsage | undefined, b: ModelUsage | undefined): ModelUsage {
  const difference = addModelUsage(a, undefined);
  for (const modelId of Object.keys(b ?? {})) {
    const negated = Object.fromEntries(Object.entries(b![modelId]!).map(([name, value]) => [name, -value])) as ModelCounters;
    countModel(difference, modelId, negated);
  }
  return difference;
}

export function hasModelUsage(usage: ModelUsage | undefined): usage is ModelUsage {
  return usage !== undefined && Object.keys(usage).some((modelId) => Object.values(usage[modelId] ?? {}).some((value) => value !== 0));
}

export interface Metering {
  units: CostUnits;
  /** What the invocation's models did (a step's llm, agent and image nodes); the usage item gets a counter per model. */
  models?: ModelUsage;
  /** When the invocation started (performance.now()), and its memory: its Lambda units so far. */
  startedAtMs: number;
  memoryMb: number;
  /** Who the invocation's units are billed to: `project#<id>` or `link#<id>`, once the request is known to be theirs. */
  subject?: string;
  /** What writes during the invocation already carried to the usage item; the settlement writes only what is missing. */
  written?: CostUnits;
  /** Response bytes of earlier invocations of the instance that this one records (data-transfer-meter.ts), in `units`. */
  dataTransferLeftBefore?: number;
}

const storage = new AsyncLocalStorage<Metering>();

export function emptyCostUnits(): CostUnits {
  return Object.fromEntries(COST_UNIT_NAMES.map((name) => [name, 0])) as unknown as CostUnits;
}

/** Runs `work` counting into `metering`; afterwards `metering.subject` says whom it was for, if anyone. */
export function runMetered<T>(metering: Metering, work: () => Promise<T>): Promise<T> {
  return storage.run(metering, work);
}

export function recordCost(change: Partial<CostUnits>): void {
  const metering = storage.getStore();
  if (!metering) return;
  for (const [key, value] of Object.entries(change) as [keyof CostUnits, number][]) {
    metering.units[key] += value;
  }
}

/** Counts what models did into the invocation's usage (per model id; see MODEL_COUNTER_NAMES). */
export function recordModelUsage(usage: ModelUsage): void {
  const metering = storage.getStore();
  if (!metering || !hasModelUsage(usage)) return;
  metering.models = addModelUsage(metering.models, usage);
}

/** This invocation's units so far, its Lambda duration included (an execution adds them up step by step). */
export function meteredSoFar(): CostUnits {
  const metering = storage.getStore();
  return metering ? invocationUnits(metering) : emptyCostUnits();
}

/** What `metering` counted, plus the invocation itself: one request, billed duration (rounded up to the ms) × memory. */
export function invocationUnits(metering: Metering): CostUnits {
  const lambdaGbMs = Math.ceil(performance.now() - metering.startedAtMs) * (metering.memoryMb / 1024);
  return { ...metering.units, lambdaInvocations: metering.units.lambdaInvocations + 1, lambdaGbMs: metering.units.lambdaGbMs + lambdaGbMs };
}

/** Usage a write can carry for the invocation: the units to add, and what to call once the write stored them. */
export interface CarriedUsage {
  readonly units: CostUnits;
  carried(): void;
}

/**
 * The usage a store write about to be sent can carry to the subject's usage item, so that item costs no request of
 * its own: what the invocation spent so far plus `expected` (what is still to come and known in advance: the write
 * itself, a put whose units follow from its item's size), minus what earlier writes carried. Whatever turns out
 * different is left for the settlement (usage-settlement.ts), which writes it only when a billed unit is missing,
 * so the usage item ends up with what was metered; only the Lambda time after the write is left out.
 */
export function usageToCarry(subject: { link: string }, expected: Partial<CostUnits>): CarriedUsage | undefined {
  const metering = storage.getStore();
  if (!metering) return undefined;
  const units = subtractCostUnits(addCostUnits(meteredSoFar(), expected), metering.written);
  return {
    units,
    carried: () => {
      metering.subject = `link#${subject.link}`;
      metering.written = addCostUnits(metering.written, units);
    },
  };
}

/** `a` minus `b`, unit by unit (a missing `b` is nothing). */
export function subtractCostUnits(a: CostUnits, b: Partial<CostUnits> | undefined): CostUnits {
  return Object.fromEntries(COST_UNIT_NAMES.map((name) => [name, a[name] - (b?.[name] ?? 0)])) as unknown as CostUnits;
}

/** The sum of two sets of units (a missing unit is 0). */
export function addCostUnits(a: Partial<CostUnits> | undefined, b: Partial<CostUnits>): CostUnits {
  return Object.fromEntries(COST_UNIT_NAMES.map((name) => [name, (a?.[name] ?? 0) + (b[name] ?? 0)])) as unknown as CostUnits;
}

/** Bills this invocation's units to a project (Published API, runs) or a link (webhooks, collection). */
export function meterSubject(subject: { project: string } | { link: string }): void {
  const metering = storage.getStore();
  if (metering) metering.subject = 'project' in subject ? `project#${subject.project}` : `link#${subject.link}`;
}

type CostListener = (operation: string, units: CostUnits) => void;
const listeners = new Set<CostListener>();

/** Lets an in-process observer (the benchmark) see each request's units; metrics remain the production channel. */
export function onRequestCost(listener: CostListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function reportRequestCost(operation: string, units: CostUnits): void {
  for (const listener of listeners) listener(operation, units);
}

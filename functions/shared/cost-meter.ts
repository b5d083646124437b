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
  /** API Gateway requests (HTTP functions: one each). */
  apiRequests: number;
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
  /** Bytes put to S3 (objects) and DynamoDB (1 KB per write unit, an upper bound): what storage is billed on. */
  storedBytes: number;
  /** Webhook events accepted (the denominator of the cost per million events). */
  webhookEvents: number;
  /** Workflow runs that finished (the denominator of the cost per run). */
  runsFinished: number;
}

export const COST_UNIT_NAMES = [
  'dynamoReadUnits', 'dynamoWriteUnits', 's3WriteRequests', 's3ReadRequests', 'stepFunctionsRequests', 'apiRequests', 'lambdaInvocations',
  'lambdaGbMs', 'stateTransitions', 'modelCalls', 'inputTokens', 'outputTokens', 'toolCalls', 'images', 'callbackDeliveries', 'storedBytes',
  'webhookEvents', 'runsFinished',
] as const satisfies readonly (keyof CostUnits)[];

export interface Metering {
  units: CostUnits;
  /** When the invocation started (performance.now()), and its memory: its Lambda units so far. */
  startedAtMs?: number;
  memoryMb?: number;
  /** Who the invocation's units are billed to: `project#<id>` or `link#<id>`, once the request is known to be theirs. */
  subject?: string;
  /** Writes units to the subject's usage item (installed by the function's stack; never throws). */
  writeUsage?: (subject: string, units: CostUnits) => Promise<void>;
  /** What usage writes during the invocation already carried; the settlement writes only what is still missing. */
  written?: CostUnits;
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

/** This invocation's units so far, its Lambda duration included (a run adds them up step by step). */
export function meteredSoFar(): CostUnits {
  const metering = storage.getStore();
  if (!metering) return emptyCostUnits();
  const lambdaGbMs = metering.startedAtMs === undefined ? 0 : Math.ceil(performance.now() - metering.startedAtMs) * ((metering.memoryMb ?? 0) / 1024);
  return { ...metering.units, lambdaInvocations: metering.units.lambdaInvocations + 1, lambdaGbMs: metering.units.lambdaGbMs + lambdaGbMs };
}

/**
 * Runs `work`, a request's last store write, beside the write of the request's usage: what it cost so far plus
 * `expected`, what `work` itself will be billed (a put's units follow from its item's size). The usage item then
 * costs no round trip of its own. A unit that turns out different is carried by the next usage write (or the
 * settlement's), so the usage item ends up with what was metered; only the Lambda time after this point is left
 * out, which is a few milliseconds of one request.
 */
export async function withUsageAlongside<T>(expected: Partial<CostUnits>, work: () => Promise<T>): Promise<T> {
  const metering = storage.getStore();
  if (!metering?.writeUsage || metering.subject === undefined) return work();
  const due = subtractCostUnits(addCostUnits(meteredSoFar(), expected), metering.written);
  metering.written = addCostUnits(metering.written, due);
  const subject = metering.subject;
  const writeUsage = metering.writeUsage;
  // Outside the meter: the usage write adds its own unit to what it writes, and must not count itself twice.
  const usageWritten = storage.exit(() => writeUsage(subject, due));
  const [outcome] = await Promise.allSettled([work(), usageWritten]);
  if (outcome.status === 'rejected') throw outcome.reason;
  return outcome.value;
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

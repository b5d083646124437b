import type { Context } from 'aws-lambda';
import { dynamo } from '../clients/dynamodb.ts';
import { requireEnv } from '../config.ts';
import {
  COST_UNIT_NAMES,
  hasModelUsage,
  invocationUnits,
  reportRequestCost,
  subtractCostUnits,
  type CostUnits,
  type Metering,
} from './cost-meter.ts';
import { logger, metrics, MetricUnit } from '../lambda/powertools.ts';
import { TABLE_ENV } from '../resources.ts';
import { createUsageMeter, type UsageMeter } from './usage-meter.ts';
import { leaveDataTransferForNext, takeDataTransferLeftBefore } from './data-transfer-meter.ts';

/** Every function has a usage table (resources.ts `METERED`): a missing one fails at cold start. */
export function usageMeterFromEnv(): UsageMeter {
  return createUsageMeter(dynamo, requireEnv(TABLE_ENV.usage));
}

/**
 * A fresh invocation's meter, its Lambda time counted from now, with the response bytes earlier invocations of the
 * instance left for it (data-transfer-meter.ts).
 */
export function invocationMetering(context: Context, units: CostUnits): Metering {
  const left = takeDataTransferLeftBefore();
  return {
    units: { ...units, dataTransferOutBytes: units.dataTransferOutBytes + left },
    startedAtMs: performance.now(),
    memoryMb: Number(context.memoryLimitInMB),
    ...(left > 0 ? { dataTransferLeftBefore: left } : {}),
  };
}

/**
 * What a usage write of its own is not worth when an earlier write carried the rest: the Lambda time since that write,
 * and the response's bytes (known only once the answer is), which go to the next invocation of the instance.
 */
const NOT_WORTH_A_WRITE: ReadonlySet<keyof CostUnits> = new Set(['lambdaGbMs', 'dataTransferOutBytes']);

/**
 * The end of every invocation: its Lambda units (one invocation, billed duration × memory), and the
 * subject's usage item (with a counter per model and counter for what its models did), unless a write during the
 * invocation (a webhook's limits update, cost-meter.ts `usageToCarry`) already carried every unit but the few
 * milliseconds of Lambda time since and the answer's bytes (left for the instance's next invocation, which carries
 * them). A failed usage write costs finance a row, never the caller an answer: it is logged and counted
 * (`UsageWriteFailures`). The units are not published as metrics as well: the usage items hold them, and each EMF
 * record would cost log bytes on every request (the cost report reads the items).
 */
export async function settleUsage(usage: UsageMeter, metering: Metering, context: Context): Promise<void> {
  const units = invocationUnits(metering);
  const own = { ...units, dataTransferOutBytes: units.dataTransferOutBytes - (metering.dataTransferLeftBefore ?? 0) };
  reportRequestCost(context.functionName, own);
  // Nobody is billed for this one (an unknown token, a refused key): its own answer is not counted, but what earlier
  // invocations left for it still goes on.
  if (metering.subject === undefined) return leaveDataTransferForNext(metering.dataTransferLeftBefore ?? 0);
  const due = subtractCostUnits(units, metering.written);
  const missing = COST_UNIT_NAMES.some((name) => !NOT_WORTH_A_WRITE.has(name) && Math.abs(due[name]) > 1e-9);
  // Model counters are never carried by an earlier write (only a webhook's limits update carries usage, and it calls no model).
  const models = hasModelUsage(metering.models) ? metering.models : undefined;
  if (metering.written && !missing && !models) return leaveDataTransferForNext(due.dataTransferOutBytes);
  try {
    await usage.add(metering.subject, due, Date.now(), models);
  } catch (error) {
    logger.error('usage not recorded', { subject: metering.subject, error: (error as Error).name });
    metrics.addMetric('UsageWriteFailures', MetricUnit.Count, 1);
  }
}

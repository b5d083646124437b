import type { Context } from 'aws-lambda';
import { dynamo } from '../clients/dynamodb.ts';
import { requireEnv } from '../config.ts';
import { COST_UNIT_NAMES, hasModelUsage, invocationUnits, reportRequestCost, subtractCostUnits, type CostUnits, type Metering } from './cost-meter.ts';
import { logger, metrics, MetricUnit, publishCostUnits } from '../lambda/powertools.ts';
import { TABLE_ENV } from '../resources.ts';
import { createUsageMeter, type UsageMeter } from './usage-meter.ts';

/** Every function has a usage table (resources.ts `METERED`): a missing one fails at cold start. */
export function usageMeterFromEnv(): UsageMeter {
  return createUsageMeter(dynamo, requireEnv(TABLE_ENV.usage));
}

/** A fresh invocation's meter, its Lambda time counted from now. */
export function invocationMetering(context: Context, units: CostUnits): Metering {
  return { units, startedAtMs: performance.now(), memoryMb: Number(context.memoryLimitInMB) };
}

/**
 * The end of every invocation: its Lambda units (one invocation, billed duration × memory), the metrics, and the
 * subject's usage item (with a counter per model and counter for what its models did), unless a write during the
 * invocation (a webhook's limits update, cost-meter.ts `usageToCarry`) already carried every unit but the few
 * milliseconds of Lambda time since. A failed usage write costs finance a row, never the caller an answer: it is
 * logged and counted (`UsageWriteFailures`).
 */
export async function settleUsage(usage: UsageMeter, metering: Metering, context: Context): Promise<void> {
  const units = invocationUnits(metering);
  publishCostUnits(units);
  reportRequestCost(context.functionName, units);
  if (metering.subject === undefined) return;
  const due = subtractCostUnits(units, metering.written);
  const missing = COST_UNIT_NAMES.some((name) => name !== 'lambdaGbMs' && Math.abs(due[name]) > 1e-9);
  // Model counters are never carried by an earlier write (only a webhook's limits update carries usage, and it calls no model).
  const models = hasModelUsage(metering.models) ? metering.models : undefined;
  if (metering.written && !missing && !models) return;
  try {
    await usage.add(metering.subject, due, Date.now(), models);
  } catch (error) {
    logger.error('usage not recorded', { subject: metering.subject, error: (error as Error).name });
    metrics.addMetric('UsageWriteFailures', MetricUnit.Count, 1);
  }
}

import type { Context } from 'aws-lambda';
import { dynamo } from './clients/dynamodb.ts';
import { requireEnv } from './config.ts';
import { COST_UNIT_NAMES, reportRequestCost, subtractCostUnits, type CostUnits, type Metering } from './cost-meter.ts';
import { logger, metrics, MetricUnit, publishCostUnits } from './powertools.ts';
import { TABLE_ENV } from './resources.ts';
import { createUsageMeter, type UsageMeter } from './usage-meter.ts';

/** Every function has a usage table (resources.ts `METERED`): a missing one fails at cold start. */
export function usageMeterFromEnv(): UsageMeter {
  return createUsageMeter(dynamo, requireEnv(TABLE_ENV.usage));
}

/** A fresh invocation's meter, able to write its usage beside its last store write (cost-meter.ts `withUsageAlongside`). */
export function invocationMetering(usage: UsageMeter, context: Context, units: CostUnits): Metering {
  return {
    units,
    startedAtMs: performance.now(),
    memoryMb: Number(context.memoryLimitInMB),
    writeUsage: (subject, due) => writeSafely(usage, subject, due),
  };
}

/**
 * The end of every invocation: its Lambda units (one invocation, billed duration × memory), the metrics, and the
 * subject's usage item, unless a usage write beside the last store write already carried every unit but the few
 * milliseconds of Lambda time since.
 */
export async function settleUsage(metering: Metering, context: Context): Promise<void> {
  const units = metering.units;
  units.lambdaInvocations += 1;
  units.lambdaGbMs += Math.ceil(performance.now() - (metering.startedAtMs ?? performance.now())) * (Number(context.memoryLimitInMB) / 1024);
  publishCostUnits(units);
  reportRequestCost(context.functionName, units);
  if (metering.subject === undefined || !metering.writeUsage) return;
  const due = subtractCostUnits(units, metering.written);
  const missing = COST_UNIT_NAMES.some((name) => name !== 'lambdaGbMs' && Math.abs(due[name]) > 1e-9);
  if (metering.written && !missing) return;
  await metering.writeUsage(metering.subject, due);
}

/** A failed usage write costs finance a row, never the caller an answer: it is logged and counted (`UsageWriteFailures`). */
async function writeSafely(usage: UsageMeter, subject: string, units: CostUnits): Promise<void> {
  try {
    await usage.add(subject, units, Date.now());
  } catch (error) {
    logger.error('usage not recorded', { subject, error: (error as Error).name });
    metrics.addMetric('UsageWriteFailures', MetricUnit.Count, 1);
  }
}

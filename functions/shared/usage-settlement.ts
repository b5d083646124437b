import type { Context } from 'aws-lambda';
import { dynamo } from './clients/dynamodb.ts';
import { requireEnv } from './config.ts';
import { reportRequestCost, type Metering } from './cost-meter.ts';
import { logger, metrics, MetricUnit, publishCostUnits } from './powertools.ts';
import { TABLE_ENV } from './resources.ts';
import { createUsageMeter, type UsageMeter } from './usage-meter.ts';

/** Every function has a usage table (resources.ts `METERED`): a missing one fails at cold start. */
export function usageMeterFromEnv(): UsageMeter {
  return createUsageMeter(dynamo, requireEnv(TABLE_ENV.usage));
}

/**
 * The end of every invocation: its Lambda units (one invocation, billed duration × memory), the metrics, and the
 * subject's usage item. A failed usage write costs finance a row, never the caller an answer: it is logged and
 * counted (`UsageWriteFailures`).
 */
export async function settleUsage(usage: UsageMeter, metering: Metering, context: Context, startedAtMs: number): Promise<void> {
  const units = metering.units;
  units.lambdaInvocations += 1;
  units.lambdaGbMs += Math.ceil(performance.now() - startedAtMs) * (Number(context.memoryLimitInMB) / 1024);
  publishCostUnits(units);
  reportRequestCost(context.functionName, units);
  try {
    await usage.add(metering, Date.now());
  } catch (error) {
    logger.error('usage not recorded', { subject: metering.subject, error: (error as Error).name });
    metrics.addMetric('UsageWriteFailures', MetricUnit.Count, 1);
  }
}

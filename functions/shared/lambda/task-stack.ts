import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { Context } from 'aws-lambda';
import { emptyCostUnits, runMetered } from '../metering/cost-meter.ts';
import { meterLogs } from '../metering/log-meter.ts';
import { logger, publishMetricsAtEnd, tracer } from './powertools.ts';
import { invocationMetering, settleUsage, usageMeterFromEnv } from '../metering/usage-settlement.ts';
import { forStateMachine } from '../store/transient-errors.ts';
import type * as z from '../zod.ts';

/**
 * The middy stack of functions the state machine invokes: validated input, Powertools, cost metering.
 * Errors propagate: the state machine's Retry and Catch decide what a failure means; throttling and
 * unavailable services arrive there as `TransientServiceError`, which its Retry waits out.
 */
export function withTaskStack<Schema extends z.ZodMiniType, Result>(
  inputSchema: Schema,
  task: (input: z.infer<Schema>, context: Context) => Promise<Result>,
) {
  const usage = usageMeterFromEnv();
  const metered = async (event: unknown, context: Context): Promise<Result> => {
    const metering = invocationMetering(context, emptyCostUnits());
    try {
      const input = inputSchema.safeParse(event);
      // The error type Lambda reports to the state machine: classic zod's name, not zod/mini's `$ZodError`.
      if (!input.success) throw Object.assign(input.error, { name: 'ZodError' });
      logger.appendKeys(correlationIds(input.data));
      return await runMetered(metering, () => meterLogs(metering, () => task(input.data, context)));
    } catch (error) {
      throw forStateMachine(error);
    } finally {
      await settleUsage(usage, metering, context);
    }
  };
  return middy(metered)
    .use(captureLambdaHandler(tracer))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(publishMetricsAtEnd());
}

/** The ids a task's input carries (an execution, a collection task and its sweep), for every log line of the invocation. */
function correlationIds(input: unknown): Record<string, string> {
  if (input === null || typeof input !== 'object') return {};
  const ids: Record<string, string> = {};
  for (const name of ['execution_id', 'task_id', 'sweep_id', 'run_id'] as const) {
    const value = (input as Record<string, unknown>)[name];
    if (typeof value === 'string') ids[name] = value;
  }
  return ids;
}

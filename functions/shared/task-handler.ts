import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { Context } from 'aws-lambda';
import { emptyCostUnits, reportRequestCost, runMetered } from './cost-meter.ts';
import { logger, metrics, publishCostUnits, tracer } from './powertools.ts';
import { forStateMachine } from './transient-errors.ts';
import type * as z from './zod.ts';

/**
 * The middy stack of functions the state machine invokes: validated input, Powertools, cost metering.
 * Errors propagate: the state machine's Retry and Catch decide what a failure means; throttling and
 * unavailable services arrive there as `TransientServiceError`, which its Retry waits out.
 */
export function taskHandler<Schema extends z.ZodMiniType, Result>(
  inputSchema: Schema,
  task: (input: z.infer<Schema>, context: Context) => Promise<Result>,
) {
  const metered = async (event: unknown, context: Context): Promise<Result> => {
    const units = emptyCostUnits();
    try {
      const input = inputSchema.safeParse(event);
      // The error type Lambda reports to the state machine: classic zod's name, not zod/mini's `$ZodError`.
      if (!input.success) throw Object.assign(input.error, { name: 'ZodError' });
      return await runMetered(units, () => task(input.data, context));
    } catch (error) {
      throw forStateMachine(error);
    } finally {
      publishCostUnits(units);
      reportRequestCost(context.functionName, units);
    }
  };
  return middy(metered).use(captureLambdaHandler(tracer)).use(injectLambdaContext(logger)).use(logMetrics(metrics));
}

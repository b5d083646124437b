import { metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { withTaskStack } from '#shared/lambda/task-stack.ts';
import * as z from '#shared/zod.ts';
import { runStep } from '#engine/step-runner.ts';
import { stepFromEnv } from '#engine/step-wiring.ts';

const deps = stepFromEnv();

/** The state is the engine's own output of the previous step (ids and the cursor); only its envelope is checked here. */
const stepStateSchema = z.looseObject({
  execution_id: z.string().check(z.minLength(1)),
  cursor: z.looseObject({
    node: z.string(),
    steps: z.number().check(z.int()),
    turns: z.number().check(z.int()),
    outputs: z.number().check(z.int(), z.minimum(0)),
    approval_node: z.nullable(z.string()),
  }),
});

/** RunStep and RecordFailure tasks of the workflow state machine. */
export const handler = withTaskStack(stepStateSchema, async (state) => {
  const next = await runStep(deps, state);
  if (next.outcome === 'finished') metrics.addMetric('WorkflowRunsFinished', MetricUnit.Count, 1);
  return next;
});

import { z } from 'zod';
import { metrics, MetricUnit } from '../shared/powertools.ts';
import { taskHandler } from '../shared/task-handler.ts';
import { runStep, type StepDeps, type StepState } from './run-step.ts';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { publicationsFromEnv } from '../workflows/wiring.ts';
import { createBedrockProvider } from './bedrock-provider.ts';
import { scriptedProvider } from './llm-provider.ts';
import { conversationsFromEnv, executionsFromEnv } from './wiring.ts';

const deps: StepDeps = {
  executions: executionsFromEnv(),
  conversations: conversationsFromEnv(),
  publications: publicationsFromEnv(),
  providers: { scripted: scriptedProvider, bedrock: createBedrockProvider(new BedrockRuntimeClient({})) },
  now: Date.now,
};

/** The state is the engine's own output of the previous step; only its envelope is checked here. */
const stepStateSchema = z.looseObject({
  execution_id: z.string().min(1),
  run: z.looseObject({ execution_id: z.string().min(1), project_id: z.string(), publication_id: z.string(), workflow_id: z.string() }),
  cursor: z.looseObject({ node: z.string(), steps: z.number().int() }),
});

/** RunStep and RecordFailure tasks of the workflow state machine. */
export const handler = taskHandler(stepStateSchema, async (state) => {
  const next = await runStep(deps, state as unknown as StepState);
  if (next.outcome === 'finished') metrics.addMetric('WorkflowRunsFinished', MetricUnit.Count, 1);
  return next;
});

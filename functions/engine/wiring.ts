import { bedrock } from '#shared/clients/bedrock.ts';
import { sfn } from '#shared/clients/sfn.ts';
import { optionalFlag, requireEnv } from '#shared/config.ts';
import { STATE_MACHINE_ENV } from '#shared/resources.ts';
import { createStateMachine } from '#executions/state-machine-gateway.ts';
import { conversationsFromEnv, executionsFromEnv, runEventsFromEnv, runStoreFromEnv } from '#executions/wiring.ts';
import { publicationsFromEnv } from '#workflows/wiring.ts';
import { createBedrockProvider } from './bedrock-provider.ts';
import type { ApprovalWaitDeps } from './approval-wait.ts';
import type { ReconcilerDeps } from './execution-reconciler.ts';
import { scriptedProvider } from './llm-provider.ts';
import type { StepDeps } from './step-runner.ts';
import type { ToolCaller } from './agent-runner.ts';

/** The state machine's functions' dependencies, built from their environment (a missing variable fails at cold start). */
export function stepFromEnv(): StepDeps {
  return {
    executions: executionsFromEnv(),
    conversations: conversationsFromEnv(),
    publications: publicationsFromEnv(),
    runs: runStoreFromEnv(),
    events: runEventsFromEnv(),
    providers: { scripted: scriptedProvider, bedrock: createBedrockProvider(bedrock) },
    // Test-only, as ALLOW_LOOPBACK_CALLBACKS: tools on a loopback host. Never set by CDK.
    tools: httpToolsFromEnv(),
    now: Date.now,
  };
}

/**
 * Agents' HTTP tools (Test-only ALLOW_LOOPBACK_TOOLS, as ALLOW_LOOPBACK_CALLBACKS: never set by CDK). Most runs call
 * no tool, so the caller and its JSON Schema validator (ajv) load with the first call, not at every cold start.
 */
function httpToolsFromEnv(): ToolCaller {
  const allowLoopback = optionalFlag('ALLOW_LOOPBACK_TOOLS');
  let tools: Promise<ToolCaller> | undefined;
  return { call: async (tool, args) => (await (tools ??= import('./http-tools.ts').then(({ createHttpTools }) => createHttpTools({ allowLoopback })))).call(tool, args) };
}

/** The reconciler reads a finished record whole (a long error is in S3) when it ends the run's log as recorded. */
export function reconcilerFromEnv(): ReconcilerDeps & { stateMachineArn: string } {
  const stateMachineArn = requireEnv(STATE_MACHINE_ENV);
  return { executions: executionsFromEnv(), events: runEventsFromEnv(), stateMachine: createStateMachine(sfn, stateMachineArn), stateMachineArn, now: Date.now };
}

export function approvalWaitFromEnv(): ApprovalWaitDeps {
  return { executions: executionsFromEnv(), events: runEventsFromEnv(), now: Date.now };
}

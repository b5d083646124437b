import { sfn } from '#shared/clients/sfn.ts';
import { requireEnv } from '#shared/config.ts';
import { STATE_MACHINE_ENV } from '#shared/resources.ts';
import { createStateMachine } from '#executions/state-machine-gateway.ts';
import { executionsFromEnv, streamEventsFromEnv } from '#executions/wiring.ts';
import type { ApprovalWaitDeps } from './approval-wait.ts';
import type { ReconcilerDeps } from './execution-reconciler.ts';

/** The reconciler reads a finished record whole (a long error is in S3) when it ends the execution's log as recorded. */
export function reconcilerFromEnv(): ReconcilerDeps & { stateMachineArn: string } {
  const stateMachineArn = requireEnv(STATE_MACHINE_ENV);
  return {
    executions: executionsFromEnv(),
    events: streamEventsFromEnv(),
    stateMachine: createStateMachine(sfn, stateMachineArn),
    stateMachineArn,
    now: Date.now,
  };
}

export function approvalWaitFromEnv(): ApprovalWaitDeps {
  return { executions: executionsFromEnv(), events: streamEventsFromEnv(), now: Date.now };
}

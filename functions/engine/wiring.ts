import { dynamo, sfn } from '../shared/clients.ts';
import { optionalFlag, requireEnv } from '../shared/config.ts';
import { STATE_MACHINE_ENV, TABLE_ENV } from '../shared/resources.ts';
import { publicationsFromEnv } from '../workflows/wiring.ts';
import { createConversationsRepository } from './conversations-repository.ts';
import type { ExecutionDeps, StartDeps } from './execution-service.ts';
import { createExecutionsRepository } from './executions-repository.ts';
import { createStateMachine } from './state-machine.ts';

/** Dependencies built from a function's environment; each reads only what its function is given, failing at cold start otherwise. */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function executionsFromEnv() {
  return createExecutionsRepository(dynamo, requireEnv(TABLE_ENV.executions));
}

/** For routes that read executions only (GET): no state machine needed. */
export function executionReadsFromEnv() {
  return { executions: executionsFromEnv(), now: Date.now };
}

export function conversationsFromEnv() {
  return createConversationsRepository(dynamo, requireEnv(TABLE_ENV.conversations));
}

export function executionServiceFromEnv(): ExecutionDeps {
  const stateMachineArn = requireEnv(STATE_MACHINE_ENV);
  return { executions: executionsFromEnv(), stateMachine: createStateMachine(sfn, stateMachineArn), stateMachineArn, sleep, now: Date.now };
}

export function executionStartFromEnv(): StartDeps {
  return {
    ...executionServiceFromEnv(),
    publications: publicationsFromEnv(),
    conversations: conversationsFromEnv(),
    allowLoopbackCallbacks: optionalFlag('ALLOW_LOOPBACK_CALLBACKS'),
  };
}

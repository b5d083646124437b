import { dynamo, sfn } from '../shared/clients.ts';
import { optionalFlag, requireEnv } from '../shared/config.ts';
import { STATE_MACHINE_ENV, TABLE_ENV } from '../shared/resources.ts';
import { publicationsFromEnv } from '../workflows/wiring.ts';
import { createConversationsRepository } from './conversations-repository.ts';
import type { ExecutionDeps } from './execution-service.ts';
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

export function executionServiceFromEnv(options: { conversations?: boolean; publications?: boolean } = {}): ExecutionDeps {
  const stateMachineArn = requireEnv(STATE_MACHINE_ENV);
  return {
    executions: executionsFromEnv(),
    publications: options.publications ? publicationsFromEnv() : (undefined as never),
    conversations: options.conversations ? conversationsFromEnv() : (undefined as never),
    stateMachine: createStateMachine(sfn, stateMachineArn),
    stateMachineArn,
    allowLoopbackCallbacks: optionalFlag('ALLOW_LOOPBACK_CALLBACKS'),
    sleep,
    now: Date.now,
  };
}

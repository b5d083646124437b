import type { StartDeps } from '#executions/execution-service.ts';
import type { WorkflowDefinition } from '#workflows/definition-schema.ts';
import { ManualClock } from './clock.ts';
import { InMemoryUserStateRepository } from './user-state-repository.ts';
import { InMemoryExecutionsRepository } from './executions-repository.ts';
import { InMemoryPublicationsRepository } from './publications-repository.ts';
import { InMemoryContextStore } from './context-store.ts';
import { InMemoryStreamEventsRepository } from './stream-events-repository.ts';
import { FakeStateMachine } from './state-machine.ts';

export const PROJECT = 'project-a';

/** One llm node answering `Echo: <message>`, then the end. */
export const ECHO: WorkflowDefinition = {
  id: 'echo',
  name: 'Echo',
  description: '',
  start: 'answer',
  tools: {},
  nodes: {
    answer: { type: 'llm', provider: 'scripted', reply: 'Echo: {{input.message}}', next: 'done' },
    done: { type: 'end', output: '{{nodes.answer.output}}' },
  },
};

/** Everything an execution touches, in memory, with ECHO published for PROJECT: what execute is given, and the fakes to look into. */
export function executionEnvironment() {
  const clock = new ManualClock();
  const executions = new InMemoryExecutionsRepository();
  const stateMachine = new FakeStateMachine();
  const publications = new InMemoryPublicationsRepository();
  const contexts = new InMemoryContextStore();
  const userState = new InMemoryUserStateRepository();
  const events = new InMemoryStreamEventsRepository();
  publications.seed(PROJECT, [ECHO]);
  const start: StartDeps = {
    executions,
    stateMachine,
    stateMachineArn: stateMachine.stateMachineArn,
    events,
    sleep: clock.sleep,
    now: clock.now,
    publications,
    contexts,
    userState,
    allowLoopbackCallbacks: false,
  };
  return { start, clock, executions, stateMachine, publications, contexts, userState, events };
}

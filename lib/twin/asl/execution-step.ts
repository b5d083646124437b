import type { MachineDefinition } from './definition.ts';
import type { ExecutionRecord, ExecutionStatus, Position } from './execution-journal.ts';
import { invokeFunction, type LocalFunction } from './lambda-invoke.ts';
import { writeResultPath, type Json } from './paths.ts';
import { checkPayload, matchingIndex, retryDelayMs, runState, type StateHooks } from './run-state.ts';
import { sleepUntil } from './sleep-until.ts';
import { StatesError } from './states-error.ts';
import { markClosed, newTaskToken, type PendingTokens } from './task-tokens.ts';

export interface ExecutionOutcome {
  status: ExecutionStatus;
  output?: string;
  error?: string;
  cause?: string;
}

/** What a step needs of the stand-in that hosts the execution. */
export interface StepHost {
  readonly tokens: PendingTokens;
  readonly functions: Record<string, LocalFunction>;
  /** Tests only: replaces every Retry backoff. */
  readonly retryIntervalMs?: number;
  definitionOf(record: ExecutionRecord): MachineDefinition;
  /** Writes the record to the journal (unless the process is closing). */
  save(record: ExecutionRecord): void;
  /** Moves the execution into a state, or fails it when that state's input is over the payload limit. */
  enter(record: ExecutionRecord, stateName: string, input: Json): void;
  finish(record: ExecutionRecord, outcome: ExecutionOutcome): void;
}

/**
 * One step of an execution from its saved position: the rest of a retry's backoff, then the state, then where its
 * outcome leads (the next state, a retry, a Catch, or the execution's end). Everything it decides is in the record
 * before it returns, so a process killed between steps resumes from the same position.
 */
export async function runStep(host: StepHost, record: ExecutionRecord, position: Position, signal: AbortSignal): Promise<void> {
  const state = host.definitionOf(record).States[position.state]!;
  if (position.retryAt !== undefined) {
    await sleepUntil(position.retryAt, signal);
    position.retryAt = undefined;
    position.startedAt = Date.now();
    host.save(record);
  }
  let outcome;
  try {
    outcome = await runState(position.state, state, position.input, contextOf(record, position), hooks(host, record, position, signal));
    checkPayload(outcome.output, `output of state '${position.state}'`);
  } catch (error) {
    closeToken(host, record, position, error);
    if (record.status !== 'RUNNING' || signal.aborted) return;
    handleFailure(host, record, position, toStatesError(error));
    return;
  }
  closeToken(host, record, position);
  if (record.status !== 'RUNNING' || signal.aborted) return;
  if (outcome.next === undefined) host.finish(record, { status: 'SUCCEEDED', output: JSON.stringify(outcome.output) });
  else host.enter(record, outcome.next, outcome.output);
}

function handleFailure(host: StepHost, record: ExecutionRecord, position: Position, failure: StatesError): void {
  const state = host.definitionOf(record).States[position.state]!;
  const isTask = state.Type === 'Task';
  const retryIndex = isTask ? matchingIndex(state.Retry, failure, true) : -1;
  const retrier = state.Retry?.[retryIndex];
  if (retrier) {
    const used = position.attempts[retryIndex] ?? 0;
    if (used < (retrier.MaxAttempts ?? 3)) {
      position.attempts[retryIndex] = used + 1;
      position.retryAt = Date.now() + (host.retryIntervalMs ?? retryDelayMs(retrier, used));
      position.wakeAt = undefined;
      position.token = undefined;
      position.tokenAnswer = undefined;
      record.stateTransitions += 1;
      host.save(record);
      return;
    }
  }
  const catcher = isTask ? state.Catch?.[matchingIndex(state.Catch, failure, true)] : undefined;
  if (catcher) {
    try {
      host.enter(
        record,
        catcher.Next,
        writeResultPath(position.input, catcher.ResultPath, { Error: failure.name, Cause: failure.causeText }),
      );
      return;
    } catch (error) {
      failure = toStatesError(error);
    }
  }
  host.finish(record, { status: 'FAILED', error: failure.name, cause: failure.causeText });
}

/** The state's token is done with; the next save of the record (the state's outcome) keeps that on disk. */
function closeToken(host: StepHost, record: ExecutionRecord, position: Position, error?: unknown): void {
  if (!position.token) return;
  host.tokens.forget(position.token);
  const closedAs = (error as Error | undefined)?.name === 'States.Timeout' ? 'TaskTimedOut' : 'TaskDoesNotExist';
  // Already ended (stopped while its task waited): nothing else will save it.
  if (markClosed(record, position.token, closedAs) && record.status !== 'RUNNING') host.save(record);
}

/** The context object (`$$`) of the state an execution is in. */
function contextOf(record: ExecutionRecord, position: Position): Json {
  const stateMachineName = record.stateMachineArn.split(':').pop()!;
  return {
    Execution: {
      Id: record.executionArn,
      Name: record.name,
      Input: JSON.parse(record.input) as Json,
      StartTime: new Date(record.startDate).toISOString(),
    },
    StateMachine: { Id: record.stateMachineArn, Name: stateMachineName },
    State: {
      Name: position.state,
      EnteredTime: new Date(position.startedAt).toISOString(),
      RetryCount: position.attempts.reduce((a, b) => a + b, 0),
    },
  };
}

function hooks(host: StepHost, record: ExecutionRecord, position: Position, signal: AbortSignal): StateHooks {
  const invoke = (functionArn: string, payload: Json) => invokeFunction(host.functions, functionArn, payload);
  return {
    enteredAtMs: position.startedAt,
    wakeAt: position.wakeAt,
    rememberWakeAt: (atMs) => {
      if (position.wakeAt === atMs) return;
      position.wakeAt = atMs;
      host.save(record);
    },
    sleepUntil: (atMs) => sleepUntil(atMs, signal),
    invoke,
    invokeAndWaitForToken: async (functionArn, payloadFor) => {
      const answer = position.tokenAnswer;
      if (answer) {
        if ('output' in answer) return answer.output;
        throw new StatesError(answer.error, answer.cause);
      }
      const resumed = position.token !== undefined;
      const token = position.token ?? newTaskToken(record.executionArn);
      const answered = host.tokens.wait(token, record.executionArn);
      if (!resumed) {
        position.token = token;
        host.save(record);
        try {
          await invoke(functionArn, payloadFor(token));
        } catch (error) {
          // A task ends at its first outcome: once SendTaskSuccess/Failure was acknowledged the task has its result,
          // and its function failing afterwards (a crash after its last write) changes nothing.
          if (position.tokenAnswer) return answered;
          throw error;
        }
      }
      return answered;
    },
  };
}

function toStatesError(error: unknown): StatesError {
  if (error instanceof StatesError) return error;
  const failure = error as Error;
  return new StatesError(failure?.name || 'Error', failure?.message ?? String(error));
}

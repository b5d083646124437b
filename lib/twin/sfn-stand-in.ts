import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadDefinition, substitute, type MachineDefinition } from './asl/definition.ts';
import { ExecutionJournal, type ExecutionRecord, type ExecutionStatus, type Position } from './asl/execution-journal.ts';
import { writeResultPath, type Json } from './asl/paths.ts';
import { checkPayload, matchingIndex, retryDelayMs, runState, type StateHooks } from './asl/run-state.ts';
import { MAX_PAYLOAD_BYTES, payloadBytes, StatesError } from './asl/states-error.ts';

/**
 * The local Step Functions: runs the product's ASL files state by state, one state machine per file, binding each
 * Lambda task to the local function its ARN names. As strict as the service where the product relies on it: 256 KiB
 * payloads (`States.DataLimitExceeded`, which `States.ALL` does not catch), no default Task timeout,
 * `.waitForTaskToken` with per-attempt tokens, Retry with backoff, MaxDelaySeconds and jitter, durable executions,
 * tokens and timers (they survive a kill of `npm start`), execution names unique per state machine, and the
 * EventBridge notice of a machine's executions that end badly to the rules on that machine.
 *
 * Memory holds what is running (its record, its timers, its pending token); an execution that ended is on disk only
 * (asl/execution-journal.ts) and read from there when asked about, so memory does not grow with the executions run.
 * A task token names its execution, so a late answer to one finds the execution's record and the error it gets.
 */
export type LocalFunction = (payload: unknown) => Promise<unknown>;

export { StatesError as StepFunctionsError };

export interface LocalStateMachine {
  stateMachineArn: string;
  definitionFile: string;
  /** Its DefinitionSubstitutions (as CloudFormation's); a `${Name}` none provides fails the load. */
  substitutions: Record<string, string>;
  /**
   * The EventBridge rule on this machine: functions invoked with "Step Functions Execution Status Change" for FAILED, TIMED_OUT and
   * ABORTED.
   */
  executionEndedSubscribers?: () => LocalFunction[];
}

export interface LocalStepFunctionsOptions {
  stateMachines: readonly LocalStateMachine[];
  functions: Record<string, LocalFunction>;
  dataDir: string;
  /** Tests only: replaces every Retry backoff. */
  retryIntervalMs?: number;
  /** Each execution as it starts, resumes after a restart, and ends (the twin's terminal shows them). */
  onExecution?: (activity: ExecutionActivity) => void;
}

export interface ExecutionActivity {
  event: 'started' | 'resumed' | 'ended';
  stateMachineArn: string;
  name: string;
  status: ExecutionStatus;
  /** The error name of an execution that ended badly (never its cause, which may quote the input). */
  error?: string;
  startDate: number;
  stopDate?: number;
}

interface HostedMachine {
  options: LocalStateMachine;
  definition: MachineDefinition;
}

interface PendingToken {
  executionArn: string;
  resolve: (output: Json) => void;
  reject: (error: Error) => void;
}

const EXECUTION_NAME = /^[A-Za-z0-9_-]{1,80}$/;
const NOTIFIED_STATUSES: ExecutionStatus[] = ['FAILED', 'TIMED_OUT', 'ABORTED'];
/** setTimeout's ceiling; longer sleeps are chained. */
const MAX_TIMER_MS = 2_147_000_000;

export class LocalStepFunctions {
  private readonly machines = new Map<string, HostedMachine>();
  private readonly journal: ExecutionJournal;
  /** Running executions only; ended ones are in the journal. */
  private readonly executions = new Map<string, ExecutionRecord>();
  private readonly pendingTokens = new Map<string, PendingToken>();
  private readonly aborts = new Map<string, AbortController>();
  private closed = false;

  constructor(private readonly options: LocalStepFunctionsOptions) {
    for (const machine of options.stateMachines) {
      const definition = loadDefinition(substitute(readFileSync(machine.definitionFile, 'utf8'), machine.substitutions));
      this.machines.set(machine.stateMachineArn, { options: machine, definition });
    }
    this.journal = new ExecutionJournal(options.dataDir);
  }

  /** Picks up what the previous process left: running executions continue where they were, tokens stay valid. */
  resume(): void {
    for (const record of this.journal.loadAll()) {
      const machine = this.machines.get(record.stateMachineArn);
      // An execution of a state machine this process does not host: kept on disk, not run.
      if (!machine) continue;
      if (record.status === 'RUNNING') {
        this.executions.set(record.executionArn, record);
        const state = record.position?.state;
        // Saved under an earlier definition that had this state (a collection sweep from when it shared the workflow machine).
        if (state !== undefined && !machine.definition.States[state]) {
          this.finish(record, {
            status: 'FAILED',
            error: 'States.Runtime',
            cause: `The state machine's definition has no state '${state}' any more`,
          });
        } else {
          this.report('resumed', record);
          void this.drive(record);
        }
      } else if (!record.endNotified && NOTIFIED_STATUSES.includes(record.status)) void this.notifyEnded(record);
    }
  }

  startExecution(stateMachineArn: string, name: string | undefined, input: string) {
    const machine = this.machines.get(stateMachineArn);
    if (!machine) throw new StatesError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${stateMachineArn}'`);
    const executionName = name ?? randomUUID();
    if (!EXECUTION_NAME.test(executionName)) throw new StatesError('InvalidName', `Invalid Name: '${executionName}'`);
    let parsed: Json;
    try {
      parsed = JSON.parse(input) as Json;
    } catch {
      throw new StatesError('InvalidExecutionInput', 'Invalid State Machine Execution Input: not valid JSON');
    }
    const bytes = Buffer.byteLength(input, 'utf8');
    if (bytes > MAX_PAYLOAD_BYTES) {
      throw new StatesError(
        'States.DataLimitExceeded',
        `The execution input has a size of ${bytes} bytes, exceeding the maximum number of bytes service limit (${MAX_PAYLOAD_BYTES}).`,
      );
    }
    const executionArn = `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${executionName}`;
    const existing = this.findExecution(executionArn);
    if (existing) {
      // Standard workflows: a repeated start with the same name and input is idempotent while it runs.
      if (existing.input === input && existing.status === 'RUNNING') return { executionArn, startDate: existing.startDate / 1000 };
      throw new StatesError('ExecutionAlreadyExists', `Execution Already Exists: '${executionArn}'`);
    }
    const record: ExecutionRecord = {
      executionArn,
      stateMachineArn,
      name: executionName,
      input,
      status: 'RUNNING',
      startDate: Date.now(),
      stateTransitions: 0,
    };
    this.executions.set(executionArn, record);
    // Before entering the first state, which may already end the execution.
    this.report('started', record);
    this.enter(record, machine.definition.StartAt, parsed);
    void this.drive(record);
    return { executionArn, startDate: record.startDate / 1000 };
  }

  describeExecution(executionArn: string) {
    const record = this.requireExecution(executionArn);
    return {
      executionArn,
      stateMachineArn: record.stateMachineArn,
      name: record.name,
      status: record.status,
      startDate: record.startDate / 1000,
      stopDate: record.stopDate === undefined ? undefined : record.stopDate / 1000,
      input: record.input,
      output: record.output,
      error: record.error,
      cause: record.cause,
    };
  }

  stopExecution(executionArn: string, error?: string, cause?: string) {
    const record = this.requireExecution(executionArn);
    if (record.status === 'RUNNING') this.finish(record, { status: 'ABORTED', error, cause });
    return { stopDate: (record.stopDate ?? Date.now()) / 1000 };
  }

  sendTaskSuccess(taskToken: string, output: string) {
    let parsed: Json;
    try {
      parsed = JSON.parse(output) as Json;
    } catch {
      throw new StatesError('InvalidOutput', 'Invalid Output: not valid JSON');
    }
    if (payloadBytes(parsed) > MAX_PAYLOAD_BYTES) throw new StatesError('InvalidOutput', `Invalid Output: over ${MAX_PAYLOAD_BYTES} bytes`);
    this.answerToken(taskToken, { output: parsed });
    return {};
  }

  sendTaskFailure(taskToken: string, error?: string, cause?: string) {
    this.answerToken(taskToken, { error: error ?? '', cause: cause ?? '' });
    return {};
  }

  /** The answer is on disk before the API acknowledges it, so a restart right after cannot lose it. */
  private answerToken(taskToken: string, answer: NonNullable<Position['tokenAnswer']>): void {
    const pending = this.takeToken(taskToken);
    const record = this.executions.get(pending.executionArn);
    if (record) {
      markClosed(record, taskToken, 'TaskDoesNotExist');
      if (record.position?.token === taskToken) record.position.tokenAnswer = answer;
      this.save(record);
    }
    if ('output' in answer) pending.resolve(answer.output);
    else pending.reject(new StatesError(answer.error, answer.cause));
  }

  /** State transitions of an execution so far: what Standard workflows bill. */
  stateTransitions(executionArn: string): number {
    return this.requireExecution(executionArn).stateTransitions;
  }

  /** Like a process exit: timers stop, nothing is marked finished; `resume()` in the next process carries on. */
  close(): void {
    this.closed = true;
    for (const controller of this.aborts.values()) controller.abort();
    for (const pending of this.pendingTokens.values()) pending.reject(new StatesError('States.Aborted', 'The local Step Functions closed'));
    this.pendingTokens.clear();
  }

  /** A running execution from memory, an ended one from the journal (of a state machine this process hosts). */
  private findExecution(executionArn: string): ExecutionRecord | undefined {
    const running = this.executions.get(executionArn);
    if (running) return running;
    const stored = this.journal.load(executionArn);
    return stored && this.machines.has(stored.stateMachineArn) ? stored : undefined;
  }

  private requireExecution(executionArn: string): ExecutionRecord {
    const record = this.findExecution(executionArn);
    if (!record) throw new StatesError('ExecutionDoesNotExist', `Execution Does Not Exist: '${executionArn}'`);
    return record;
  }

  private takeToken(taskToken: string): PendingToken {
    const pending = this.pendingTokens.get(taskToken);
    if (pending) {
      this.pendingTokens.delete(taskToken);
      return pending;
    }
    const executionArn = executionOfToken(taskToken);
    const closedAs = executionArn === undefined ? undefined : this.findExecution(executionArn)?.closedTokens?.[taskToken];
    if (closedAs === 'TaskTimedOut') throw new StatesError('TaskTimedOut', 'Task Timed Out');
    if (closedAs) throw new StatesError('TaskDoesNotExist', 'Task does not exist anymore');
    throw new StatesError('InvalidToken', 'Invalid Token');
  }

  private save(record: ExecutionRecord): void {
    if (!this.closed) this.journal.save(record);
  }

  private enter(record: ExecutionRecord, stateName: string, input: Json): void {
    try {
      checkPayload(input, `input of state '${stateName}'`);
    } catch (error) {
      this.finish(record, { status: 'FAILED', error: (error as StatesError).name, cause: (error as StatesError).causeText });
      return;
    }
    record.position = { state: stateName, input, startedAt: Date.now(), attempts: [] };
    record.stateTransitions += 1;
    this.save(record);
  }

  private finish(record: ExecutionRecord, outcome: { status: ExecutionStatus; output?: string; error?: string; cause?: string }): void {
    if (record.status !== 'RUNNING') return;
    Object.assign(record, outcome, { stopDate: Date.now(), position: undefined });
    this.aborts.get(record.executionArn)?.abort();
    for (const [token, pending] of this.pendingTokens) {
      if (pending.executionArn !== record.executionArn) continue;
      this.pendingTokens.delete(token);
      markClosed(record, token, 'TaskDoesNotExist');
      pending.reject(new StatesError('States.Aborted', 'The execution ended'));
    }
    this.save(record);
    // Ended: from now on the journal answers for it (a notice still being delivered keeps its own reference).
    this.executions.delete(record.executionArn);
    this.report('ended', record);
    if (NOTIFIED_STATUSES.includes(record.status)) void this.notifyEnded(record);
  }

  private report(event: ExecutionActivity['event'], record: ExecutionRecord): void {
    const { onExecution } = this.options;
    if (!onExecution) return;
    const { stateMachineArn, name, status, error, startDate, stopDate } = record;
    onExecution({ event, stateMachineArn, name, status, error, startDate, stopDate });
  }

  /** Runs the execution from its current position until it ends, waits for good, or the process closes. */
  private async drive(record: ExecutionRecord): Promise<void> {
    const controller = new AbortController();
    this.aborts.set(record.executionArn, controller);
    try {
      while (record.status === 'RUNNING' && !this.closed && record.position) {
        await this.step(record, record.position, controller.signal);
      }
    } catch (error) {
      // A defect of the runner itself: end the execution visibly rather than leave it running forever.
      if (!controller.signal.aborted && !this.closed) {
        console.error(`local Step Functions: execution ${record.name} failed in the runner`, error);
        this.finish(record, { status: 'FAILED', error: 'States.Runtime', cause: (error as Error).message });
      }
    } finally {
      this.aborts.delete(record.executionArn);
    }
  }

  /** The definition an execution runs: its machine's (an execution keeps its machine for life). */
  private definitionOf(record: ExecutionRecord): MachineDefinition {
    return this.machines.get(record.stateMachineArn)!.definition;
  }

  private async step(record: ExecutionRecord, position: Position, signal: AbortSignal): Promise<void> {
    const state = this.definitionOf(record).States[position.state]!;
    if (position.retryAt !== undefined) {
      await sleepUntil(position.retryAt, signal);
      position.retryAt = undefined;
      position.startedAt = Date.now();
      this.save(record);
    }
    let outcome;
    try {
      outcome = await runState(
        position.state,
        state,
        position.input,
        this.contextOf(record, position),
        this.hooks(record, position, signal),
      );
      checkPayload(outcome.output, `output of state '${position.state}'`);
    } catch (error) {
      this.closeToken(record, position, error);
      if (record.status !== 'RUNNING' || signal.aborted) return;
      this.handleFailure(record, position, toStatesError(error));
      return;
    }
    this.closeToken(record, position);
    if (record.status !== 'RUNNING' || signal.aborted) return;
    if (outcome.next === undefined) this.finish(record, { status: 'SUCCEEDED', output: JSON.stringify(outcome.output) });
    else this.enter(record, outcome.next, outcome.output);
  }

  private handleFailure(record: ExecutionRecord, position: Position, failure: StatesError): void {
    const state = this.definitionOf(record).States[position.state]!;
    const isTask = state.Type === 'Task';
    const retryIndex = isTask ? matchingIndex(state.Retry, failure, true) : -1;
    const retrier = state.Retry?.[retryIndex];
    if (retrier) {
      const used = position.attempts[retryIndex] ?? 0;
      if (used < (retrier.MaxAttempts ?? 3)) {
        position.attempts[retryIndex] = used + 1;
        position.retryAt = Date.now() + (this.options.retryIntervalMs ?? retryDelayMs(retrier, used));
        position.wakeAt = undefined;
        position.token = undefined;
        position.tokenAnswer = undefined;
        record.stateTransitions += 1;
        this.save(record);
        return;
      }
    }
    const catcher = isTask ? state.Catch?.[matchingIndex(state.Catch, failure, true)] : undefined;
    if (catcher) {
      try {
        this.enter(
          record,
          catcher.Next,
          writeResultPath(position.input, catcher.ResultPath, { Error: failure.name, Cause: failure.causeText }),
        );
        return;
      } catch (error) {
        failure = toStatesError(error);
      }
    }
    this.finish(record, { status: 'FAILED', error: failure.name, cause: failure.causeText });
  }

  /** The state's token is done with; the next save of the record (the state's outcome) keeps that on disk. */
  private closeToken(record: ExecutionRecord, position: Position, error?: unknown): void {
    if (!position.token) return;
    this.pendingTokens.delete(position.token);
    const closedAs = (error as Error | undefined)?.name === 'States.Timeout' ? 'TaskTimedOut' : 'TaskDoesNotExist';
    // Already ended (stopped while its task waited): nothing else will save it.
    if (markClosed(record, position.token, closedAs) && record.status !== 'RUNNING') this.save(record);
  }

  private contextOf(record: ExecutionRecord, position: Position): Json {
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

  private hooks(record: ExecutionRecord, position: Position, signal: AbortSignal): StateHooks {
    return {
      enteredAtMs: position.startedAt,
      wakeAt: position.wakeAt,
      rememberWakeAt: (atMs) => {
        if (position.wakeAt === atMs) return;
        position.wakeAt = atMs;
        this.save(record);
      },
      sleepUntil: (atMs) => sleepUntil(atMs, signal),
      invoke: (functionArn, payload) => this.invoke(functionArn, payload),
      invokeAndWaitForToken: async (functionArn, payloadFor) => {
        const answer = position.tokenAnswer;
        if (answer) {
          if ('output' in answer) return answer.output;
          throw new StatesError(answer.error, answer.cause);
        }
        const resumed = position.token !== undefined;
        const token = position.token ?? newTaskToken(record.executionArn);
        const answered = new Promise<Json>((resolve, reject) =>
          this.pendingTokens.set(token, { executionArn: record.executionArn, resolve, reject }),
        );
        answered.catch(() => undefined);
        if (!resumed) {
          position.token = token;
          this.save(record);
          try {
            await this.invoke(functionArn, payloadFor(token));
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

  /** Lambda's invoke contract: JSON in, JSON out, and a thrown error surfaces as Error = its name, Cause = the error report. */
  private async invoke(functionArn: string, payload: Json): Promise<Json> {
    const fn = this.options.functions[functionArn];
    if (!fn) throw new StatesError('Lambda.ResourceNotFoundException', `Function not found: ${functionArn}`);
    try {
      const result = await fn(JSON.parse(JSON.stringify(payload)));
      return result === undefined ? null : (JSON.parse(JSON.stringify(result)) as Json);
    } catch (error) {
      const failure = error as Error;
      const errorType = failure.name || 'Error';
      throw new StatesError(errorType, JSON.stringify({ errorType, errorMessage: failure.message }));
    }
  }

  /**
   * EventBridge's "Step Functions Execution Status Change", delivered at least once (retried, and again after a
   * restart) to the rule on the execution's own state machine.
   */
  private async notifyEnded(record: ExecutionRecord): Promise<void> {
    const subscribers = this.machines.get(record.stateMachineArn)?.options.executionEndedSubscribers?.() ?? [];
    const event = {
      version: '0',
      id: randomUUID(),
      'detail-type': 'Step Functions Execution Status Change',
      source: 'aws.states',
      account: record.stateMachineArn.split(':')[4],
      time: new Date(record.stopDate ?? Date.now()).toISOString(),
      region: record.stateMachineArn.split(':')[3],
      resources: [record.executionArn],
      detail: {
        executionArn: record.executionArn,
        stateMachineArn: record.stateMachineArn,
        name: record.name,
        status: record.status,
        startDate: record.startDate,
        stopDate: record.stopDate ?? null,
        input: record.input,
        output: record.output ?? null,
        error: record.error ?? null,
        cause: record.cause ?? null,
      },
    };
    for (const subscriber of subscribers) {
      for (let attempt = 0; ; attempt += 1) {
        try {
          await subscriber(event);
          break;
        } catch {
          if (attempt >= 3 || this.closed) return;
          await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** attempt));
        }
      }
    }
    record.endNotified = true;
    this.save(record);
  }
}

/** A token's random part: what makes it unguessable (base64url of 48 bytes, 64 characters). */
const TOKEN_NONCE_CHARS = 64;

/** A task token: an unguessable part, then its execution's ARN (base64url), as AWS's tokens carry what they belong to. */
function newTaskToken(executionArn: string): string {
  return randomBytes(48).toString('base64url') + Buffer.from(executionArn, 'utf8').toString('base64url');
}

/** The execution a token names, if it is one this runner could have issued. */
function executionOfToken(taskToken: string): string | undefined {
  const named = taskToken.slice(TOKEN_NONCE_CHARS);
  if (taskToken.length <= TOKEN_NONCE_CHARS || !/^[A-Za-z0-9_-]+$/.test(named)) return undefined;
  const executionArn = Buffer.from(named, 'base64url').toString('utf8');
  return executionArn.includes(':execution:') ? executionArn : undefined;
}

/** Records how a token closed, once (the first way it closed is the one a late answer hears); false if it already was. */
function markClosed(record: ExecutionRecord, taskToken: string, closedAs: 'TaskTimedOut' | 'TaskDoesNotExist'): boolean {
  const closed = (record.closedTokens ??= {});
  if (closed[taskToken]) return false;
  closed[taskToken] = closedAs;
  return true;
}

function toStatesError(error: unknown): StatesError {
  if (error instanceof StatesError) return error;
  const failure = error as Error;
  return new StatesError(failure?.name || 'Error', failure?.message ?? String(error));
}

function sleepUntil(atMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new StatesError('States.Aborted', 'aborted'));
    let timer: NodeJS.Timeout;
    const arm = () => {
      const left = atMs - Date.now();
      if (left <= 0) {
        signal.removeEventListener('abort', onAbort);
        resolve();
        return;
      }
      timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
    };
    const onAbort = () => {
      clearTimeout(timer);
      reject(new StatesError('States.Aborted', 'aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    arm();
  });
}

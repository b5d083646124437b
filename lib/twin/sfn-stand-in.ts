import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadDefinition, substitute, type MachineDefinition } from './asl/definition.ts';
import { ExecutionJournal, type ExecutionRecord, type ExecutionStatus, type Position } from './asl/execution-journal.ts';
import { deliverStatusChange, NOTIFIED_STATUSES } from './asl/execution-status-change.ts';
import { runStep, type ExecutionOutcome, type StepHost } from './asl/execution-step.ts';
import type { LocalFunction } from './asl/lambda-invoke.ts';
import type { Json } from './asl/paths.ts';
import { checkPayload } from './asl/run-state.ts';
import { MAX_PAYLOAD_BYTES, payloadBytes, StatesError } from './asl/states-error.ts';
import { markClosed, PendingTokens } from './asl/task-tokens.ts';

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
export type { LocalFunction };

export { StatesError as StepFunctionsError };

interface LocalStateMachine {
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

const EXECUTION_NAME = /^[A-Za-z0-9_-]{1,80}$/;

export class LocalStepFunctions {
  private readonly machines = new Map<string, HostedMachine>();
  private readonly journal: ExecutionJournal;
  /** Running executions only; ended ones are in the journal. */
  private readonly executions = new Map<string, ExecutionRecord>();
  private readonly tokens = new PendingTokens();
  private readonly aborts = new Map<string, AbortController>();
  private readonly stepHost: StepHost;
  private closed = false;

  constructor(private readonly options: LocalStepFunctionsOptions) {
    for (const machine of options.stateMachines) {
      const definition = loadDefinition(substitute(readFileSync(machine.definitionFile, 'utf8'), machine.substitutions));
      this.machines.set(machine.stateMachineArn, { options: machine, definition });
    }
    this.journal = new ExecutionJournal(options.dataDir);
    this.stepHost = {
      tokens: this.tokens,
      functions: options.functions,
      retryIntervalMs: options.retryIntervalMs,
      // An execution keeps its machine for life.
      definitionOf: (record) => this.machines.get(record.stateMachineArn)!.definition,
      save: (record) => this.save(record),
      enter: (record, stateName, input) => this.enter(record, stateName, input),
      finish: (record, outcome) => this.finish(record, outcome),
    };
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
    const pending = this.tokens.take(taskToken, (executionArn) => this.findExecution(executionArn));
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
    this.tokens.close();
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

  private finish(record: ExecutionRecord, outcome: ExecutionOutcome): void {
    if (record.status !== 'RUNNING') return;
    Object.assign(record, outcome, { stopDate: Date.now(), position: undefined });
    this.aborts.get(record.executionArn)?.abort();
    this.tokens.abandonAll(record);
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
        await runStep(this.stepHost, record, record.position, controller.signal);
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

  /** Delivered at least once (retried, and again after a restart) to the rule on the execution's own state machine. */
  private async notifyEnded(record: ExecutionRecord): Promise<void> {
    const subscribers = this.machines.get(record.stateMachineArn)?.options.executionEndedSubscribers?.() ?? [];
    if (!(await deliverStatusChange(record, subscribers, () => this.closed))) return;
    record.endNotified = true;
    this.save(record);
  }
}

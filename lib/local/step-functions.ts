import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { StateMachine as LocalRunner } from 'aws-local-stepfunctions';

/**
 * The local Step Functions: runs the product's ASL file with aws-local-stepfunctions, binding each
 * `lambda:invoke` task to the local function its FunctionName names. What the runner lacks is emulated here:
 * `.waitForTaskToken` (a pending promise per token, answered by SendTaskSuccess/Failure), per-task tokens,
 * named executions, stop, and the count of state transitions (the Step Functions bill).
 */

// aws-local-stepfunctions needs Promise.withResolvers, which Node 20 lacks.
(Promise as unknown as { withResolvers?: unknown }).withResolvers ??= function withResolvers<T>() {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((a, b) => {
    resolve = a;
    reject = b;
  });
  return { promise, resolve, reject };
};

export type LocalFunction = (payload: unknown) => Promise<unknown>;

export class StepFunctionsError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

interface ExecutionEntry {
  executionArn: string;
  name: string;
  input: string;
  status: 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'ABORTED';
  startDate: number;
  stopDate?: number;
  output?: string;
  error?: string;
  cause?: string;
  stateTransitions: number;
  abort: () => void;
}

interface PendingTask {
  executionArn: string;
  resolve: (output: unknown) => void;
  reject: (error: Error) => void;
}

const TOKEN_PLACEHOLDER = '__local_task_token__';

export interface LocalStepFunctionsOptions {
  definitionFile: string;
  stateMachineArn: string;
  substitutions: Record<string, string>;
  functions: Record<string, LocalFunction>;
  /** Tests only: shortens every Retry interval. */
  retryIntervalMs?: number;
}

export class LocalStepFunctions {
  private readonly runner: LocalRunner;
  private readonly definition: { States: Record<string, { Type: string; Resource?: string; Retry?: unknown[] }> };
  private readonly executions = new Map<string, ExecutionEntry>();
  private readonly pendingTasks = new Map<string, PendingTask>();

  constructor(private readonly options: LocalStepFunctionsOptions) {
    let text = readFileSync(options.definitionFile, 'utf8');
    for (const [name, value] of Object.entries(options.substitutions)) text = text.replaceAll(`\${${name}}`, value);
    this.definition = JSON.parse(text);
    this.runner = new LocalRunner(this.definition as never);
  }

  get stateMachineArn(): string {
    return this.options.stateMachineArn;
  }

  startExecution(stateMachineArn: string, name: string | undefined, input: string) {
    if (stateMachineArn !== this.options.stateMachineArn) throw new StepFunctionsError('StateMachineDoesNotExist', `State machine ${stateMachineArn} does not exist`);
    const executionName = name ?? randomUUID();
    const executionArn = `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${executionName}`;
    const existing = this.executions.get(executionArn);
    if (existing) {
      if (existing.input === input && existing.status === 'RUNNING') return { executionArn, startDate: existing.startDate };
      throw new StepFunctionsError('ExecutionAlreadyExists', `Execution ${executionName} already exists`);
    }
    const execution = this.runner.run(JSON.parse(input), {
      overrides: {
        taskResourceLocalHandlers: this.taskHandlers(executionArn),
        ...(this.options.retryIntervalMs === undefined ? {} : { retryIntervalOverrides: this.retryOverrides(this.options.retryIntervalMs) }),
      },
      context: { Execution: { Id: executionArn, Name: executionName, Input: JSON.parse(input) }, Task: { Token: TOKEN_PLACEHOLDER } },
    } as never);
    const entry: ExecutionEntry = { executionArn, name: executionName, input, status: 'RUNNING', startDate: Date.now(), stateTransitions: 0, abort: execution.abort };
    this.executions.set(executionArn, entry);
    void this.countTransitions(entry, execution.eventLogs as AsyncGenerator<{ type: string }>);
    execution.result.then(
      (output: unknown) => this.settle(entry, { status: 'SUCCEEDED', output: JSON.stringify(output) }),
      (error: Error) => {
        if (entry.status === 'ABORTED') return;
        this.settle(entry, { status: 'FAILED', error: error.name, cause: error.message });
      },
    );
    return { executionArn, startDate: entry.startDate };
  }

  describeExecution(executionArn: string) {
    const entry = this.requireExecution(executionArn);
    return {
      executionArn,
      stateMachineArn: this.options.stateMachineArn,
      name: entry.name,
      status: entry.status,
      startDate: entry.startDate / 1000,
      stopDate: entry.stopDate === undefined ? undefined : entry.stopDate / 1000,
      input: entry.input,
      output: entry.output,
      error: entry.error,
      cause: entry.cause,
    };
  }

  stopExecution(executionArn: string, error?: string, cause?: string) {
    const entry = this.requireExecution(executionArn);
    if (entry.status === 'RUNNING') {
      this.settle(entry, { status: 'ABORTED', error, cause });
      entry.abort();
    }
    return { stopDate: (entry.stopDate ?? Date.now()) / 1000 };
  }

  sendTaskSuccess(taskToken: string, output: string) {
    this.takeTask(taskToken).resolve(JSON.parse(output));
    return {};
  }

  sendTaskFailure(taskToken: string, error?: string, cause?: string) {
    this.takeTask(taskToken).reject(new StepFunctionsError(error ?? 'TaskFailed', cause ?? ''));
    return {};
  }

  /** State transitions of an execution so far: what Standard workflows bill. */
  stateTransitions(executionArn: string): number {
    return this.requireExecution(executionArn).stateTransitions;
  }

  close(): void {
    for (const entry of this.executions.values()) if (entry.status === 'RUNNING') this.stopExecution(entry.executionArn, 'Shutdown');
  }

  private requireExecution(executionArn: string): ExecutionEntry {
    const entry = this.executions.get(executionArn);
    if (!entry) throw new StepFunctionsError('ExecutionDoesNotExist', `Execution ${executionArn} does not exist`);
    return entry;
  }

  private takeTask(taskToken: string): PendingTask {
    const task = this.pendingTasks.get(taskToken);
    if (!task) throw new StepFunctionsError('TaskDoesNotExist', 'Task does not exist anymore');
    this.pendingTasks.delete(taskToken);
    return task;
  }

  private settle(entry: ExecutionEntry, outcome: Partial<ExecutionEntry>): void {
    if (entry.status !== 'RUNNING') return;
    Object.assign(entry, outcome, { stopDate: Date.now() });
    for (const [token, task] of this.pendingTasks) if (task.executionArn === entry.executionArn) this.pendingTasks.delete(token);
  }

  private async countTransitions(entry: ExecutionEntry, events: AsyncGenerator<{ type: string }>): Promise<void> {
    for await (const event of events) {
      if (event.type === 'StateEntered' || event.type === 'StateRetried') entry.stateTransitions += 1;
    }
  }

  private retryOverrides(intervalMs: number): Record<string, number> {
    return Object.fromEntries(
      Object.entries(this.definition.States)
        .filter(([, state]) => state.Retry)
        .map(([name]) => [name, intervalMs]),
    );
  }

  /** Every Task state invokes the local function its FunctionName names, the way `lambda:invoke` does on AWS. */
  private taskHandlers(executionArn: string): Record<string, (input: { FunctionName: string; Payload: unknown }) => Promise<unknown>> {
    const handlers: Record<string, (input: { FunctionName: string; Payload: unknown }) => Promise<unknown>> = {};
    for (const [stateName, state] of Object.entries(this.definition.States)) {
      if (state.Type !== 'Task') continue;
      const waitsForToken = state.Resource?.endsWith('.waitForTaskToken') ?? false;
      handlers[stateName] = async ({ FunctionName, Payload }) => {
        const fn = this.options.functions[FunctionName];
        if (!fn) throw new StepFunctionsError('Lambda.ResourceNotFoundException', `Function ${FunctionName} not found`);
        if (!waitsForToken) return { StatusCode: 200, Payload: await invoke(fn, Payload) };
        const token = `${randomUUID()}.${randomUUID()}`;
        const answered = new Promise<unknown>((resolve, reject) => this.pendingTasks.set(token, { executionArn, resolve, reject }));
        await invoke(fn, JSON.parse(JSON.stringify(Payload).replaceAll(TOKEN_PLACEHOLDER, token)));
        return answered;
      };
    }
    return handlers;
  }
}

/** Lambda's invoke contract: JSON in, JSON out, and a thrown error surfaces under its own name. */
async function invoke(fn: LocalFunction, payload: unknown): Promise<unknown> {
  try {
    const result = await fn(JSON.parse(JSON.stringify(payload ?? null)));
    return result === undefined ? null : JSON.parse(JSON.stringify(result));
  } catch (error) {
    const failure = error as Error;
    throw new StepFunctionsError(failure.name || 'Error', failure.message);
  }
}

import type { StateMachine, StateMachineInput } from '#executions/state-machine-gateway.ts';
import { awsError, Faults } from './faults.ts';

const FAKE_STATE_MACHINE_ARN = 'arn:aws:states:eu-west-1:123456789012:stateMachine:workflow';

type TokenState = 'waiting' | 'answered' | 'timed-out';

/**
 * Step Functions as the API handlers use it (`createStateMachine`'s contract): executions by name, a repeated
 * start of one name is a no-op (the real gateway turns ExecutionAlreadyExists into the ARN), a stop of an
 * unknown execution throws ExecutionDoesNotExist, and task tokens answer the way Step Functions does: an
 * unknown token is InvalidToken, a token already answered is TaskDoesNotExist, a timed-out one TaskTimedOut.
 * `loseNextAnswer` models a start that went through while its caller heard only an error (a timeout, a 5xx).
 */
export class FakeStateMachine implements StateMachine {
  readonly executions = new Map<string, { input: StateMachineInput; status: 'RUNNING' | 'ABORTED'; stopCause?: string }>();
  readonly tokens = new Map<string, TokenState>();
  readonly resumed: { taskToken: string; output: unknown }[] = [];
  readonly faults = new Faults<keyof StateMachine>();
  private issued = 0;
  private readonly lostAnswers: { error: Error; meanwhile?: () => void | Promise<void> }[] = [];

  constructor(readonly stateMachineArn = FAKE_STATE_MACHINE_ARN) {}

  async start(name: string, input: StateMachineInput): Promise<string> {
    await this.faults.enter('start');
    if (!this.executions.has(name)) this.executions.set(name, { input: structuredClone(input), status: 'RUNNING' });
    const lost = this.lostAnswers.shift();
    if (lost) {
      await lost.meanwhile?.();
      throw lost.error;
    }
    return `${this.stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
  }

  async stop(executionArn: string, cause: string): Promise<void> {
    await this.faults.enter('stop');
    const execution = this.executions.get(executionArn.slice(executionArn.lastIndexOf(':') + 1));
    if (!execution) throw awsError('ExecutionDoesNotExist', `Execution does not exist: '${executionArn}'`);
    Object.assign(execution, { status: 'ABORTED', stopCause: cause });
  }

  async resume(taskToken: string, output: unknown): Promise<void> {
    await this.faults.enter('resume');
    this.answer(taskToken);
    this.resumed.push({ taskToken, output: structuredClone(output) });
  }

  /** Test helper: a task token an AwaitApproval state would hand out for this execution. */
  issueToken(executionId: string): string {
    this.issued += 1;
    const token = `token-${executionId}-${this.issued}`;
    this.tokens.set(token, 'waiting');
    return token;
  }

  /**
   * Test helper: the next start goes through (its execution exists and runs) but its answer is lost: the caller gets
   * `error`, as after a timeout or a dropped connection. `meanwhile` runs once the execution exists, before the caller
   * hears (the execution's first step, say).
   */
  loseNextAnswer(error: Error, meanwhile?: () => void | Promise<void>): void {
    this.lostAnswers.push({ error, meanwhile });
  }

  /** Test helper: the approval task's timeout passed. */
  timeOut(taskToken: string): void {
    this.tokens.set(taskToken, 'timed-out');
  }

  /** Test helper: the names of the executions started, in order. */
  startedNames(): string[] {
    return [...this.executions.keys()];
  }

  private answer(taskToken: string): void {
    const state = this.tokens.get(taskToken);
    if (state === undefined) throw awsError('InvalidToken', 'Invalid Token');
    if (state === 'timed-out') throw awsError('TaskTimedOut', 'Task Timed Out');
    if (state === 'answered') throw awsError('TaskDoesNotExist', 'Task Does Not Exist');
    this.tokens.set(taskToken, 'answered');
  }
}

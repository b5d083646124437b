import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { retryDelayMs } from '#lib/twin/asl/run-state.ts';
import { LocalStepFunctions, type LocalFunction } from '#lib/twin/sfn-stand-in.ts';

const ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:test';
const FN = 'arn:aws:lambda:us-east-1:000000000000:function:work';
const KIB = 1024;

let dataDir: string;
let machines: LocalStepFunctions[] = [];

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'sfn-'));
});
afterEach(() => {
  for (const machine of machines) machine.close();
  machines = [];
  vi.useRealTimers();
  rmSync(dataDir, { recursive: true, force: true });
});

function machine(definition: object, functions: Record<string, LocalFunction>, subscribers: LocalFunction[] = []) {
  return host([{ arn: ARN, definition, subscribers }], functions);
}

/** One stand-in hosting each of `hosted`, as the twin hosts the workflow and collection state machines. */
function host(hosted: { arn: string; definition: object; subscribers?: LocalFunction[] }[], functions: Record<string, LocalFunction>) {
  const sfn = new LocalStepFunctions({
    stateMachines: hosted.map(({ arn, definition, subscribers = [] }) => {
      const file = join(dataDir, `${arn.split(':').pop()}.asl.json`);
      writeFileSync(file, JSON.stringify(definition));
      return {
        stateMachineArn: arn,
        definitionFile: file,
        substitutions: { Partition: 'aws', WorkArn: FN },
        executionEndedSubscribers: () => subscribers,
      };
    }),
    functions,
    dataDir,
  });
  machines.push(sfn);
  sfn.resume();
  return sfn;
}

async function settled(sfn: LocalStepFunctions, executionArn: string, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const described = sfn.describeExecution(executionArn);
    if (described.status !== 'RUNNING') return described;
    if (Date.now() > deadline) throw new Error(`still running: ${executionArn}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const invokeTask = (extra: object = {}) => ({
  Type: 'Task',
  Resource: 'arn:${Partition}:states:::lambda:invoke',
  Parameters: { FunctionName: '${WorkArn}', 'Payload.$': '$' },
  OutputPath: '$.Payload',
  ...extra,
});

const catchAll = { Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.failure', Next: 'Caught' }] };
const caughtState = { Caught: { Type: 'Pass', Result: 'caught', End: true } };

describe('the local Step Functions, as strict as the service', () => {
  it('refuses an execution input over 256 KiB with States.DataLimitExceeded', () => {
    const sfn = machine({ StartAt: 'Work', States: { Work: invokeTask({ End: true }) } }, { [FN]: async (x) => x });
    const input = JSON.stringify({ blob: 'x'.repeat(256 * KIB) });
    expect(() => sfn.startExecution(ARN, 'too-big', input)).toThrow(expect.objectContaining({ name: 'States.DataLimitExceeded' }));
    expect(() => sfn.describeExecution(`${ARN.replace(':stateMachine:', ':execution:')}:too-big`)).toThrow(/Does Not Exist/);
  });

  it('fails the execution when a task result passes 256 KiB, and States.ALL does not catch it', async () => {
    const subscriber = vi.fn(async (_event: unknown) => undefined);
    const sfn = machine(
      { StartAt: 'Work', States: { Work: invokeTask({ End: true, ...catchAll }), ...caughtState } },
      { [FN]: async () => ({ blob: 'x'.repeat(300 * KIB) }) },
      [subscriber],
    );
    const { executionArn } = sfn.startExecution(ARN, 'big-result', '{}');
    const described = await settled(sfn, executionArn);
    expect(described.status).toBe('FAILED');
    expect(described.error).toBe('States.DataLimitExceeded');
    expect(described.cause).toMatch(/Work/);
    await vi.waitFor(() => expect(subscriber).toHaveBeenCalledTimes(1));
    expect(subscriber.mock.calls[0]![0]).toMatchObject({
      source: 'aws.states',
      'detail-type': 'Step Functions Execution Status Change',
      detail: { executionArn, status: 'FAILED', error: 'States.DataLimitExceeded' },
    });
  });

  it('fails a state whose input grows past 256 KiB through ResultPath, uncaught', async () => {
    const half = 'y'.repeat(150 * KIB);
    const sfn = machine(
      {
        StartAt: 'First',
        States: {
          First: invokeTask({ OutputPath: '$', ResultPath: '$.first', Next: 'Second', ...catchAll }),
          Second: invokeTask({ End: true }),
          ...caughtState,
        },
      },
      { [FN]: async () => ({ half }) },
    );
    const { executionArn } = sfn.startExecution(ARN, 'grows', JSON.stringify({ half }));
    const described = await settled(sfn, executionArn);
    expect(described).toMatchObject({ status: 'FAILED', error: 'States.DataLimitExceeded' });
  });

  it('still catches ordinary task errors with States.ALL and reports the Lambda error report as Cause', async () => {
    const sfn = machine(
      {
        StartAt: 'Work',
        States: {
          Work: invokeTask({ End: true, Catch: [{ ErrorEquals: ['States.ALL'], Next: 'Echo' }] }),
          Echo: { Type: 'Pass', End: true },
        },
      },
      {
        [FN]: async () => {
          throw Object.assign(new Error('boom'), { name: 'CustomError' });
        },
      },
    );
    const { executionArn } = sfn.startExecution(ARN, 'caught', '{}');
    const described = await settled(sfn, executionArn);
    expect(described.status).toBe('SUCCEEDED');
    expect(JSON.parse(described.output!)).toEqual({
      Error: 'CustomError',
      Cause: JSON.stringify({ errorType: 'CustomError', errorMessage: 'boom' }),
    });
  });

  it('gives a Task no timeout of its own: a task running ten minutes completes', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    let finishWork!: (value: unknown) => void;
    const sfn = machine(
      { StartAt: 'Work', States: { Work: invokeTask({ End: true }) } },
      { [FN]: () => new Promise((resolve) => (finishWork = resolve)) },
    );
    const { executionArn } = sfn.startExecution(ARN, 'slow', '{}');
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(sfn.describeExecution(executionArn).status).toBe('RUNNING');
    finishWork({ done: true });
    await vi.advanceTimersByTimeAsync(10);
    expect(sfn.describeExecution(executionArn)).toMatchObject({ status: 'SUCCEEDED', output: '{"done":true}' });
  });

  it('times a task out with States.Timeout only when it names TimeoutSeconds', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const sfn = machine(
      { StartAt: 'Work', States: { Work: invokeTask({ End: true, TimeoutSeconds: 5 }) } },
      { [FN]: () => new Promise(() => undefined) },
    );
    const { executionArn } = sfn.startExecution(ARN, 'timed', '{}');
    await vi.advanceTimersByTimeAsync(5_001);
    expect(sfn.describeExecution(executionArn)).toMatchObject({ status: 'FAILED', error: 'States.Timeout' });
  });

  it('retries with backoff capped by MaxDelaySeconds, with full jitter below the cap', () => {
    const retrier = { ErrorEquals: ['X'], IntervalSeconds: 1, BackoffRate: 2, MaxDelaySeconds: 5 };
    expect([0, 1, 2, 3, 4].map((attempt) => retryDelayMs(retrier, attempt))).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect(retryDelayMs({ ...retrier, JitterStrategy: 'FULL' }, 3, () => 0.5)).toBe(2500);
  });

  it('refuses definitions it cannot run exactly, naming the state and the reason', () => {
    expect(() => machine({ StartAt: 'M', States: { M: { Type: 'Map', Iterator: {}, End: true } } }, {})).toThrow(
      /M: state type Map is not supported/,
    );
    expect(() =>
      machine({ StartAt: 'P', States: { P: { Type: 'Pass', Parameters: { 'x.$': 'States.Format($.a)' }, End: true } } }, {}),
    ).toThrow(/intrinsic function/);
  });
});

describe('the local Step Functions survives a restart, as executions on AWS do', () => {
  const approvalMachine = {
    StartAt: 'Approve',
    States: {
      Approve: {
        Type: 'Task',
        Resource: 'arn:${Partition}:states:::lambda:invoke.waitForTaskToken',
        Parameters: { FunctionName: '${WorkArn}', Payload: { 'token.$': '$$.Task.Token' } },
        TimeoutSeconds: 3600,
        ResultPath: '$.decision',
        Next: 'Pause',
      },
      Pause: { Type: 'Wait', Seconds: 1, Next: 'Done' },
      Done: { Type: 'Succeed' },
    },
  };

  it('keeps a task token valid and a Wait timer running across a new process on the same data directory', async () => {
    const tokens: string[] = [];
    const first = machine(approvalMachine, { [FN]: async (payload) => void tokens.push((payload as { token: string }).token) });
    const { executionArn } = first.startExecution(ARN, 'durable', JSON.stringify({ run: 1 }));
    await vi.waitFor(() => expect(tokens).toHaveLength(1));
    const transitionsBefore = first.stateTransitions(executionArn);
    first.close();

    const second = machine(approvalMachine, { [FN]: async () => expect.fail('a resumed token task must not invoke its function again') });
    expect(second.describeExecution(executionArn).status).toBe('RUNNING');
    second.sendTaskSuccess(tokens[0]!, JSON.stringify({ decision: 'approved' }));
    expect(() => second.sendTaskSuccess(tokens[0]!, '{}')).toThrow(expect.objectContaining({ name: 'TaskDoesNotExist' }));
    await vi.waitFor(() => expect(second.describeExecution(executionArn).status).toBe('RUNNING'));
    second.close();

    const third = machine(approvalMachine, {});
    const described = await settled(third, executionArn);
    expect(described.status).toBe('SUCCEEDED');
    expect(JSON.parse(described.output!)).toEqual({ run: 1, decision: { decision: 'approved' } });
    expect(third.stateTransitions(executionArn)).toBe(transitionsBefore + 2);
  });

  it('ends a token task at its first outcome: an answer accepted while its function still ran wins over that function failing after it', async () => {
    const retrying = {
      ...approvalMachine,
      States: {
        ...approvalMachine.States,
        Approve: { ...approvalMachine.States.Approve, Retry: [{ ErrorEquals: ['States.ALL'], MaxAttempts: 3 }] },
      },
    };
    let invocations = 0;
    const sfn: LocalStepFunctions = machine(retrying, {
      [FN]: async (payload) => {
        invocations += 1;
        // The function hands the token on (a caller answers it at once), then crashes before its own answer.
        sfn.sendTaskSuccess((payload as { token: string }).token, JSON.stringify({ decision: 'approved' }));
        throw Object.assign(new Error('Runtime exited with error: exit status 1'), { name: 'Runtime.ExitError' });
      },
    });
    const { executionArn } = sfn.startExecution(ARN, 'answered-then-crashed', JSON.stringify({ run: 1 }));
    const described = await settled(sfn, executionArn);
    expect(described.status).toBe('SUCCEEDED');
    expect(JSON.parse(described.output!)).toEqual({ run: 1, decision: { decision: 'approved' } });
    expect(invocations).toBe(1);
  });

  it('answers InvalidToken for a token it never issued', () => {
    const sfn = machine(approvalMachine, {});
    expect(() => sfn.sendTaskSuccess('made-up', '{}')).toThrow(expect.objectContaining({ name: 'InvalidToken' }));
  });
});

describe('the local Step Functions hosts several state machines, as an account does', () => {
  const OTHER = 'arn:aws:states:us-east-1:000000000000:stateMachine:other';
  const executionArn = (stateMachineArn: string, name: string) => `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
  const failing = { StartAt: 'Fail', States: { Fail: { Type: 'Fail', Error: 'Broken', Cause: 'on purpose' } } };
  const passing = { StartAt: 'Done', States: { Done: { Type: 'Pass', Result: 'other', End: true } } };

  it('runs each execution on its own machine, keeps names unique per machine, and tells only that machine’s rule it ended', async () => {
    const heardByFirst = vi.fn(async (_event: unknown) => undefined);
    const heardByOther = vi.fn(async (_event: unknown) => undefined);
    const sfn = host(
      [
        { arn: ARN, definition: failing, subscribers: [heardByFirst] },
        { arn: OTHER, definition: passing, subscribers: [heardByOther] },
      ],
      {},
    );
    // The same name on two machines is two executions.
    const first = sfn.startExecution(ARN, 'same-name', '{}').executionArn;
    const other = sfn.startExecution(OTHER, 'same-name', '{}').executionArn;
    expect([first, other]).toEqual([executionArn(ARN, 'same-name'), executionArn(OTHER, 'same-name')]);
    expect(await settled(sfn, first)).toMatchObject({ status: 'FAILED', error: 'Broken', stateMachineArn: ARN });
    expect(await settled(sfn, other)).toMatchObject({ status: 'SUCCEEDED', output: '"other"', stateMachineArn: OTHER });
    expect(heardByFirst).toHaveBeenCalledTimes(1);
    expect(heardByFirst.mock.calls[0]![0]).toMatchObject({ detail: { stateMachineArn: ARN, name: 'same-name', status: 'FAILED' } });
    expect(heardByOther).not.toHaveBeenCalled();
    expect(() => sfn.startExecution('arn:aws:states:us-east-1:000000000000:stateMachine:nowhere', 'x', '{}')).toThrow(
      expect.objectContaining({ name: 'StateMachineDoesNotExist' }),
    );
  });

  it('keeps each machine’s executions apart across a restart', async () => {
    const waiting = { StartAt: 'Wait', States: { Wait: { Type: 'Wait', Seconds: 3600, End: true } } };
    const first = host(
      [
        { arn: ARN, definition: waiting },
        { arn: OTHER, definition: waiting },
      ],
      {},
    );
    first.startExecution(ARN, 'same-name', JSON.stringify({ on: 'first' }));
    first.startExecution(OTHER, 'same-name', JSON.stringify({ on: 'other' }));
    first.close();

    const second = host(
      [
        { arn: ARN, definition: waiting },
        { arn: OTHER, definition: waiting },
      ],
      {},
    );
    expect(second.describeExecution(executionArn(ARN, 'same-name'))).toMatchObject({ status: 'RUNNING', input: '{"on":"first"}' });
    expect(second.describeExecution(executionArn(OTHER, 'same-name'))).toMatchObject({ status: 'RUNNING', input: '{"on":"other"}' });
  });

  it('resumes an execution saved when the twin hosted one machine, and fails one whose state its definition no longer has', async () => {
    const journal = join(dataDir, 'step-functions');
    mkdirSync(journal, { recursive: true });
    const saved = (name: string, state: string) => ({
      executionArn: executionArn(ARN, name),
      stateMachineArn: ARN,
      name,
      input: '{}',
      status: 'RUNNING',
      startDate: Date.now(),
      stateTransitions: 1,
      position: { state, input: {}, startedAt: Date.now(), attempts: [] },
    });
    // Named after the execution alone, as the journal named its files before.
    writeFileSync(join(journal, 'kept.json'), JSON.stringify(saved('kept', 'Done')));
    writeFileSync(join(journal, 'collect-tsk_1-night.json'), JSON.stringify(saved('collect-tsk_1-night', 'CollectBatch')));
    const ended = vi.fn(async (_event: unknown) => undefined);

    const sfn = host([{ arn: ARN, definition: passing, subscribers: [ended] }], {});
    expect(await settled(sfn, executionArn(ARN, 'kept'))).toMatchObject({ status: 'SUCCEEDED' });
    expect(sfn.describeExecution(executionArn(ARN, 'collect-tsk_1-night'))).toMatchObject({ status: 'FAILED', error: 'States.Runtime' });
    expect(sfn.describeExecution(executionArn(ARN, 'collect-tsk_1-night')).cause).toMatch(/no state 'CollectBatch'/);
    expect(ended).toHaveBeenCalledTimes(1);
    expect(readdirSync(journal).sort()).toEqual(['test.collect-tsk_1-night.json', 'test.kept.json']);
  });
});

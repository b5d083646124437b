import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalStepFunctions, type ExecutionActivity, type LocalFunction } from '#lib/twin/sfn-stand-in.ts';

/** What the local Step Functions tells the twin's terminal: each execution's start, resumption after a restart, and end. */
const ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:test';
const FN = 'arn:aws:lambda:us-east-1:000000000000:function:work';
const definition = {
  StartAt: 'Work',
  States: {
    Work: {
      Type: 'Task',
      Resource: 'arn:${Partition}:states:::lambda:invoke',
      Parameters: { FunctionName: '${WorkArn}', 'Payload.$': '$' },
      OutputPath: '$.Payload',
      End: true,
    },
  },
};

let dataDir: string;
const hosts: LocalStepFunctions[] = [];
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'sfn-activity-'));
});
afterEach(() => {
  for (const sfn of hosts.splice(0)) sfn.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function host(work: LocalFunction, activity: ExecutionActivity[]): LocalStepFunctions {
  const file = join(dataDir, 'test.asl.json');
  writeFileSync(file, JSON.stringify(definition));
  const sfn = new LocalStepFunctions({
    stateMachines: [{ stateMachineArn: ARN, definitionFile: file, substitutions: { Partition: 'aws', WorkArn: FN } }],
    functions: { [FN]: work },
    dataDir,
    onExecution: (event) => activity.push(event),
  });
  hosts.push(sfn);
  sfn.resume();
  return sfn;
}

describe('the local Step Functions reports', () => {
  it('an execution starting and ending, with the error name of one that failed', async () => {
    const activity: ExecutionActivity[] = [];
    const sfn = host(async (payload) => {
      if ((payload as { fail?: boolean }).fail) throw Object.assign(new Error('no'), { name: 'Runtime.OutOfMemory' });
      return { ok: true };
    }, activity);

    sfn.startExecution(ARN, 'good', '{}');
    sfn.startExecution(ARN, 'bad', '{"fail":true}');
    await vi.waitFor(() => expect(activity.filter((event) => event.event === 'ended')).toHaveLength(2), { timeout: 20_000 });

    const of = (name: string) =>
      activity.filter((event) => event.name === name).map(({ event, status, error }) => ({ event, status, error }));
    expect(of('good')).toEqual([
      { event: 'started', status: 'RUNNING', error: undefined },
      { event: 'ended', status: 'SUCCEEDED', error: undefined },
    ]);
    expect(of('bad')).toEqual([
      { event: 'started', status: 'RUNNING', error: undefined },
      { event: 'ended', status: 'FAILED', error: 'Runtime.OutOfMemory' },
    ]);
    const ended = activity.find((event) => event.name === 'good' && event.event === 'ended')!;
    expect(ended.stopDate).toBeGreaterThanOrEqual(ended.startDate);
  });

  it('an execution resumed by the next process, and stopped there', async () => {
    const first: ExecutionActivity[] = [];
    let invoked!: () => void;
    const working = new Promise<void>((resolve) => (invoked = resolve));
    const before = host(() => {
      invoked();
      return new Promise(() => undefined);
    }, first);
    const { executionArn } = before.startExecution(ARN, 'durable', '{}');
    await working;
    before.close();
    expect(first.map((event) => event.event)).toEqual(['started']);

    const second: ExecutionActivity[] = [];
    const after = host(() => new Promise(() => undefined), second);
    after.stopExecution(executionArn, 'Cancelled');
    expect(second.map(({ event, name, status, error }) => ({ event, name, status, error }))).toEqual([
      { event: 'resumed', name: 'durable', status: 'RUNNING', error: undefined },
      { event: 'ended', name: 'durable', status: 'ABORTED', error: 'Cancelled' },
    ]);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CALLBACK_ABANDONED_ERROR } from '#engine/execution-reconciler.ts';
import { TransientServiceError } from '#shared/store/transient-errors.ts';
import { LocalStepFunctions, type LocalFunction } from '#lib/twin/sfn-stand-in.ts';

/** The product's own ASL files on the strict local Step Functions, with stand-in task functions. */
const definitionOf = (machine: string) => fileURLToPath(new URL(`../../statemachines/${machine}.asl.json`, import.meta.url));
const ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:workflow';
const COLLECTION_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:collection';
const fnArn = (name: string) => `arn:aws:lambda:us-east-1:000000000000:function:${name}`;

let dataDir: string;
let machine: LocalStepFunctions | undefined;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'retries-'));
});
afterEach(() => {
  machine?.close();
  machine = undefined;
  rmSync(dataDir, { recursive: true, force: true });
});

function workflow(functions: { step: LocalFunction; callback?: LocalFunction; collect?: LocalFunction }, ended: unknown[] = []) {
  machine = new LocalStepFunctions({
    stateMachines: [
      {
        stateMachineArn: ARN,
        definitionFile: definitionOf('workflow'),
        substitutions: {
          Partition: 'aws',
          WorkflowStepFunctionArn: fnArn('step'),
          AwaitApprovalFunctionArn: fnArn('await'),
          DeliverCallbackFunctionArn: fnArn('callback'),
        },
        executionEndedSubscribers: () => [async (event) => void ended.push(event)],
      },
      {
        stateMachineArn: COLLECTION_ARN,
        definitionFile: definitionOf('collection'),
        substitutions: { Partition: 'aws', CollectBatchFunctionArn: fnArn('collect') },
      },
    ],
    functions: {
      [fnArn('step')]: functions.step,
      [fnArn('await')]: async () => ({ recorded: true }),
      [fnArn('callback')]: functions.callback ?? (async () => ({ delivered: true })),
      [fnArn('collect')]: functions.collect ?? (async (payload) => ({ ...(payload as object), done: true })),
    },
    dataDir,
    retryIntervalMs: 1,
  });
  machine.resume();
  return machine;
}

async function settled(sfn: LocalStepFunctions, executionArn: string) {
  for (let i = 0; i < 500; i++) {
    const described = sfn.describeExecution(executionArn);
    if (described.status !== 'RUNNING') return described;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`still running: ${executionArn}`);
}

const runInput = JSON.stringify({
  mode: 'run',
  execution_id: 'e-1',
  cursor: { node: 'start', steps: 0, turns: 0, outputs: 0, approval_node: null },
});
const named = (name: string, message = name) => Object.assign(new Error(message), { name });

/** A step that fails `failures` times with `error`, then finishes the execution; it notes every payload it got. */
function flakyStep(failures: number, error: () => Error, finished: object = { outcome: 'finished', callback: false }) {
  const payloads: Record<string, unknown>[] = [];
  const step: LocalFunction = async (payload) => {
    payloads.push(payload as Record<string, unknown>);
    if (payloads.length <= failures) throw error();
    return { ...(payload as object), ...finished };
  };
  return { step, payloads };
}

describe('retries of the workflow state machine, on the strict local Step Functions', () => {
  it('waits out a throttled step (TransientServiceError) and completes without reaching RecordFailure', async () => {
    const throttled = () =>
      new TransientServiceError(new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: { httpStatusCode: 400 } }));
    // MaxAttempts 6: six retries after the first attempt.
    const { step, payloads } = flakyStep(6, throttled);
    const sfn = workflow({ step });
    const described = await settled(sfn, sfn.startExecution(ARN, 'throttled', runInput).executionArn);
    expect(described.status).toBe('SUCCEEDED');
    expect(payloads).toHaveLength(7);
    expect(payloads.some((payload) => 'failure' in payload)).toBe(false);
  });

  it('retries Lambda throttling of the dispatch 8 times', async () => {
    const { step, payloads } = flakyStep(8, () => named('Lambda.TooManyRequestsException', 'Rate Exceeded.'));
    const sfn = workflow({ step });
    expect((await settled(sfn, sfn.startExecution(ARN, 'lambda-throttled', runInput).executionArn)).status).toBe('SUCCEEDED');
    expect(payloads).toHaveLength(9);
  });

  it('sends a real failure, or a transient one that never recovers, to RecordFailure', async () => {
    for (const [name, error, attempts] of [
      ['real', () => named('TypeError', 'x is undefined'), 1],
      ['never-recovers', () => new TransientServiceError(named('ServiceUnavailable')), 7],
    ] as const) {
      let calls = 0;
      const recorded: Record<string, any>[] = [];
      const step: LocalFunction = async (payload) => {
        const state = payload as Record<string, any>;
        if (state.failure) {
          recorded.push(state);
          return { ...state, outcome: 'finished', callback: false };
        }
        calls += 1;
        throw error();
      };
      const sfn = workflow({ step });
      expect((await settled(sfn, sfn.startExecution(ARN, name, runInput).executionArn)).status, name).toBe('SUCCEEDED');
      expect(calls, name).toBe(attempts);
      expect(recorded, name).toHaveLength(1);
      expect(recorded[0]!.failure.Error, name).toBe(error().name);
      machine!.close();
      machine = undefined;
    }
  });

  it('fails the execution as CallbackAbandoned when even the give-up cannot be recorded, so the reconciler hears of it', async () => {
    const ended: any[] = [];
    const { step } = flakyStep(0, () => new Error('unused'), { outcome: 'finished', callback: true });
    const callbackCalls: Record<string, unknown>[] = [];
    const callback: LocalFunction = async (payload) => {
      callbackCalls.push(payload as Record<string, unknown>);
      throw (payload as { give_up?: boolean }).give_up
        ? named('AccessDeniedException', 'cannot write')
        : named('CallbackDeliveryError', 'receiver answered 500');
    };
    const sfn = workflow({ step, callback }, ended);
    const described = await settled(sfn, sfn.startExecution(ARN, 'give-up-fails', runInput).executionArn);
    expect(described).toMatchObject({ status: 'FAILED', error: CALLBACK_ABANDONED_ERROR });
    // Each task's first attempt plus its retries (States.ALL: 6 for the delivery, 5 for the give-up).
    expect(callbackCalls.filter((payload) => !payload.give_up)).toHaveLength(7);
    expect(callbackCalls.filter((payload) => payload.give_up)).toHaveLength(6);
    for (let i = 0; i < 100 && ended.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(ended).toHaveLength(1);
    expect(ended[0].detail).toMatchObject({
      name: 'give-up-fails',
      status: 'FAILED',
      error: CALLBACK_ABANDONED_ERROR,
      stateMachineArn: ARN,
    });
  });
});

describe('the collection state machine, on the strict local Step Functions', () => {
  const unusedStep: LocalFunction = async () => expect.fail('a collection sweep never reaches the workflow step');
  const collectInput = JSON.stringify({ task_id: 'tsk_1', sweep_id: 'night-2026-11-24' });

  it('invokes CollectBatch with the task and sweep until a batch says the sweep is done', async () => {
    const payloads: unknown[] = [];
    const collect: LocalFunction = async (payload) => {
      payloads.push(payload);
      return { ...(payload as object), done: payloads.length === 3 };
    };
    const sfn = workflow({ step: unusedStep, collect });
    const described = await settled(sfn, sfn.startExecution(COLLECTION_ARN, 'collect-tsk_1-night', collectInput).executionArn);
    expect(described.status).toBe('SUCCEEDED');
    expect(payloads).toEqual(Array(3).fill({ task_id: 'tsk_1', sweep_id: 'night-2026-11-24' }));
  });

  it('retries a batch that is throttled, and fails the execution after three retries of any other error, telling no reconciler', async () => {
    const ended: unknown[] = [];
    let calls = 0;
    const collect: LocalFunction = async () => {
      calls += 1;
      if (calls <= 2) throw new TransientServiceError(named('ThrottlingException'));
      throw named('AccessDenied', 'the bucket refused');
    };
    const sfn = workflow({ step: unusedStep, collect }, ended);
    const described = await settled(sfn, sfn.startExecution(COLLECTION_ARN, 'collect-fails', collectInput).executionArn);
    expect(described).toMatchObject({ status: 'FAILED', error: 'AccessDenied' });
    // Two throttled attempts, then the first attempt of the real error and its three retries.
    expect(calls).toBe(6);
    // The notice goes out as an execution ends, to the rule on its own machine: the workflow's hears nothing.
    expect(ended).toEqual([]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedRequest } from '#lib/twin/iam/front-door.ts';
import { createKey, publishFixtures, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { storeRequestRecorder } from '../support/round-trips.ts';

/**
 * What a blocking execute sends to the stores, counted at the twin's front doors: the items an execution needs are written
 * side by side before the state machine starts, and the execution's status is read a few times, not once every few ms.
 */
const recorder = storeRequestRecorder();
let twin: TestTwin;
let client: ReturnType<typeof publishedClient>;

beforeAll(async () => {
  twin = await startTestTwin({ onStoreRequest: recorder.onStoreRequest });
  await publishFixtures(twin);
  client = publishedClient(twin, (await createKey(twin, 'full')).key);
});
afterAll(() => twin?.close());

const named = (served: ServedRequest) => `${served.operation} ${served.resource.replace(/^.*(table|stateMachine)[/:]/, '')}`;
const isStatusRead = (served: ServedRequest) =>
  served.operation === 'GetItem' && served.resource.endsWith(`table/${twin.twin.tables.executions}`);

async function execute(body: object = {}): Promise<ServedRequest[]> {
  return recorder.during(
    'PublishedExecute',
    async () => {
      const answer = await client.execute('echo', { user_id: 'round-trips', input: { message: 'hi' }, ...body });
      expect(answer.body).toMatchObject({ status: 'completed', output: 'Echo: hi' });
    },
    twin,
  );
}

describe('round trips of a blocking execute', () => {
  it('writes the record, the execution context, the log start, the initial memory and the user turn, then starts the execution', async () => {
    await execute();
    const served = await execute({ initial_memory: { plan: 'gold' } });
    const statusReads = served.filter(isStatusRead);
    // The requests this pins; the key, the limits, the publication and the usage meter are the same as any route's.
    const pinned = served.filter((request) => ['PutItem', 'BatchWriteItem', 'StartExecution'].includes(request.operation));
    expect(pinned.map(named).sort()).toEqual([
      'BatchWriteItem local-conversations', // the initial memory
      'PutItem local-conversations', // the user's message, the thread's newest turn
      'PutItem local-executions', // the queued record
      'PutItem local-executions', // the execution context
      'PutItem local-runEvents', // the log's start
      'StartExecution local-workflow',
    ]);
    expect(statusReads.length).toBeGreaterThanOrEqual(1);

    // Sent side by side (test/service pins that; here the twin's front door, one thread for every store, may take
    // them one after another), and all of them answered before the state machine is asked to start: the execution reads
    // them. In the front doors' order of events, not by clock: a request sent after an answer arrives after it.
    const start = served.find((request) => request.operation === 'StartExecution')!;
    for (const write of pinned.filter((request) => request !== start)) expect(start.arrived, named(write)).toBeGreaterThan(write.answered);
    for (const read of statusReads) expect(read.arrived).toBeGreaterThan(start.answered);
  });

  it("has the execution's first step read its context and mark it running before its first node, and nothing else", async () => {
    // A step of an earlier run may still be writing its usage: this execution's step is then the only one recorded.
    await twin.settled(['WorkflowStep']);
    const served = await recorder.during(
      'WorkflowStep',
      () => client.execute('echo', { user_id: 'round-trips', input: { message: 'hi' } }),
      twin,
    );
    // First the context read and the running mark (in arrival order). That the two are sent side by side is pinned by
    // test/service/step-runner.test.ts: the twin's front door, one thread for every store, may serve them one after
    // the other on a busy machine.
    const [first, second, ...others] = served;
    expect([first, second].map((request) => request && named(request)).sort()).toEqual([
      'GetItem local-executions',
      'UpdateItem local-executions',
    ]);
    // The user's message is execute's to write: the step writes the reply, the thread's one other turn.
    expect(others.filter((request) => named(request) === 'PutItem local-conversations')).toHaveLength(1);
    // Everything else was sent after both answers came back: it arrived after both were handed to their sockets.
    for (const other of others) expect(other.arrived, named(other)).toBeGreaterThan(Math.max(first!.answered, second!.answered));
  });

  it('reads the status of a quick run at most five times at the median, once the function has seen a few runs', async () => {
    // The first runs of a function instance are read on the fixed schedule; later ones when runs of the workflow settled.
    for (let i = 0; i < 4; i++) await execute();
    const reads: number[] = [];
    for (let i = 0; i < 11; i++) reads.push((await execute()).filter(isStatusRead).length);
    reads.sort((a, b) => a - b);
    expect(reads[5]).toBeLessThanOrEqual(5);
    expect(reads[0]).toBeGreaterThanOrEqual(1);
  });
});

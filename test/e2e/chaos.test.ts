import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandoffStore, fileAnnouncer } from '#collection/handoff-store.ts';
import type { NormalizedConversation } from '#collection/conversation.ts';
import { FAULT_KINDS } from '#lib/twin/faults.ts';
import { executionArnOf } from '#shared/execution-arn.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/local-names.ts';
import { EXAMPLE_FAULTS, runChaos, type ChaosRun } from '../chaos/chaos.ts';
import { retryingClient, type RetryingClient } from '../chaos/client.ts';
import { startDefectiveGateway, withoutEvent, type Exchange, type Mistake } from '../chaos/defective-gateway.ts';
import type { Violation } from '../chaos/invariants.ts';
import { publishedContext } from '../chaos/published-context.ts';
import { publishedActions } from '../chaos/published-traffic.ts';
import { readStoredState } from '../chaos/stored-state.ts';
import type { AcknowledgedEvent, TrafficSetup } from '../chaos/traffic-record.ts';

/**
 * The chaos suite, bounded: `npm run chaos` drives the same mix for minutes; here it runs for 20 s, and on to at least
 * 200 answers on a slow machine (so every kind of request and fault has its chance whatever the speed), on a fixed seed
 * (a failure replays with TWIN_FAULTS_SEED), with the state machines' retry pauses shortened, and every invariant must
 * hold. Then the product is broken on purpose, once per invariant, in the way that invariant guards against (a gateway
 * that answers or rewrites for the product, a store written past its rules), and each invariant must report it.
 */
const SEED = 20_261_128;
let chaos: ChaosRun;

beforeAll(async () => {
  chaos = await runChaos({
    faults: EXAMPLE_FAULTS,
    seed: SEED,
    durationMs: 20_000,
    minAnswers: 200,
    concurrency: 6,
    settleMs: 90_000,
    collectEveryMs: 8_000,
    retryIntervalMs: 50,
    progress: (line) => process.stderr.write(`${new Date().toISOString()} ${line}\n`),
  });
}, 600_000);
afterAll(async () => {
  await chaos?.close();
});

describe('chaos, bounded', () => {
  it('drives every kind of request under every kind of fault, and every invariant holds', () => {
    const { report } = chaos;
    expect(chaos.violations.map((violation) => `${violation.invariant}: ${violation.detail}`)).toEqual([]);
    expect(report.acknowledged_events).toBeGreaterThan(0);
    expect(report.duplicates).toBeGreaterThan(0);
    expect(report.runs).toBeGreaterThan(0);
    expect(report.streams).toBeGreaterThan(0);
    expect(report.subscriptions).toBeGreaterThan(0);
    expect(report.collections).toBeGreaterThan(0);
    expect(report.nightly_sweeps).toBeGreaterThan(0);
    expect(report.tool_calls).toBeGreaterThan(0);
    // The faults were really there: the store kinds are drawn on every store call a function makes.
    expect(report.faults['dynamodb:throttle']).toBeGreaterThan(0);
    expect(report.faults['dynamodb:error']).toBeGreaterThan(0);
    expect(report.faults['lambda:delay']).toBeGreaterThan(0);
    expect(report.retries).toBeGreaterThan(0);
  });
});

/** DeliverCallback's attempts before GiveUpCallback: the first and its Retry's six (statemachines/workflow.asl.json). */
const LADDER_ATTEMPTS = 7;

describe('a callback whose give-up cannot be recorded', () => {
  it('is given up by the execution-ended reconciler once CallbackNotRecorded has failed the execution', async () => {
    // Only this execution runs now: every function fails from its callback's last attempt until the execution has failed.
    for (const kind of FAULT_KINDS) chaos.faults.set(kind, 0);
    const key = randomUUID();
    chaos.setup.callbacks.watch(key, (attempt) => {
      if (attempt === LADDER_ATTEMPTS) chaos.faults.set('lambda:error', 1);
    });
    const client = retryingClient();
    const run = await publishedActions(publishedContext(chaos.twin.url, chaos.setup, client, chaos.record)).startExecution('echo', random, {
      idempotencyKey: key,
      callbackPlan: { behaviour: 'always-fail' },
    });
    expect(run?.answeredStatus).toBe('completed');
    const arn = executionArnOf(chaos.twin.twin.state_machine_arn, run!.executionId);
    for (let wait = 0; chaos.twin.stepFunctions.describeExecution(arn).status === 'RUNNING' && wait < 3_000; wait++) await client.sleep(20);
    chaos.faults.set('lambda:error', 0);
    expect(chaos.twin.stepFunctions.describeExecution(arn)).toMatchObject({ status: 'FAILED', error: 'CallbackAbandoned' });
    const callbackState = async () => {
      const stored = await readStoredState(chaos.dataDir);
      stored.close();
      return stored.executions.get(`chaos-${key}`)?.[0]?.callback_state;
    };
    for (let wait = 0; (await callbackState()) !== 'abandoned' && wait < 100; wait++) await client.sleep(200);
    expect(await callbackState()).toBe('abandoned');
    expect(chaos.setup.callbacks.deliveries(key).map((delivery) => delivery.outcome)).toEqual(Array(LADDER_ATTEMPTS).fill('refused'));
  });
});

/** Where each violation the defects below cause is kept for its test. */
let violations: Violation[] = [];
const found = (invariant: Violation['invariant'], detail: string | RegExp) =>
  expect(violations).toContainEqual({
    invariant,
    detail: typeof detail === 'string' ? expect.stringContaining(detail) : expect.stringMatching(detail),
  });

/** What each defect left to look for. */
const planted: Record<string, string> = {};

describe('each invariant reports the defect it guards against', () => {
  beforeAll(async () => {
    // The defects are the product's now, not the faults': every kind off.
    for (const kind of FAULT_KINDS) chaos.faults.set(kind, 0);
    const client = retryingClient();
    const hanging = retryingClient({ requestTimeoutMs: 1_000 });
    try {
      await Promise.all([
        decisionAnsweredTwice(client),
        decisionOvertakenByStop(client),
        stopThatAppliedNothing(client),
        keyDroppedOnTheWay(client),
        signatureDropped(client),
        streamMissingAnEvent(client),
        lifecycleEndingWrong(client),
        awsNameInA409(client),
        requestNeverAnswered(hanging),
      ]);
    } finally {
      for (const ledger of [client.ledger, hanging.ledger]) {
        chaos.record.ledger.answers.push(...ledger.answers);
        chaos.record.ledger.unanswered.push(...ledger.unanswered);
      }
    }
    await storedTwiceUnderTwoSources();
    await storedUnderAnotherId();
    await handedOffAgainAndAltered();
    await failedOnEveryFault();
    violations = await chaos.recheck({ settle: true });
  }, 300_000);

  it('acknowledged-stored-once: an event stored under a second source, or under another id', () => {
    found('acknowledged-stored-once', planted.secondSource!);
    found('acknowledged-stored-once', planted.otherId!);
  });

  it('handed-off-once: a conversation handed off again outside any sweep, and one handed off with other messages', () => {
    found('handed-off-once', planted.handedOffAgain!);
    found('handed-off-once', planted.altered!);
  });

  it('run-ends: executions failing more often than the faults account for', () => {
    found('run-ends', planted.failed!);
  });

  it('decision-once: approve and then reject both answered 200', () => {
    found('decision-once', planted.twice!);
  });

  it('decision-not-overtaken: an approve answered 200 while a stop cancelled the execution', () => {
    found('decision-not-overtaken', planted.overtaken!);
  });

  it('stop-honoured: a stop answered 200 that stopped nothing', () => {
    found('stop-honoured', planted.stopped!);
  });

  it('one-run-per-key: an Idempotency-Key dropped on the way, two concurrent sends starting two executions', () => {
    found('one-run-per-key', planted.key!);
  });

  it('callback-delivered: a callback delivered without its signature', () => {
    found('callback-delivered', planted.unsigned!);
  });

  it('stream-exactly-once: a stream that left out an event', () => {
    found('stream-exactly-once', planted.stream!);
  });

  it('lifecycle-events: a subscription whose final status is not the execution’s', () => {
    found('lifecycle-events', planted.lifecycle!);
  });

  it('refusal-shape: an AWS error name in a 409', () => {
    found('refusal-shape', planted.refusal!);
  });

  it('answered: a request the API never answers', () => {
    found('answered', planted.hang!);
  });
});

/** A gateway in front of the twin (and, for `/hook/` paths, the callback receiver) making one mistake. */
async function through<T>(
  mistake: (exchange: Exchange) => Mistake | undefined,
  use: (url: string, setup: TrafficSetup) => Promise<T>,
): Promise<T> {
  const receiver = new URL(chaos.setup.callbacks.url('x')).origin;
  const gateway = await startDefectiveGateway((path) => (path.startsWith('/hook/') ? receiver : chaos.twin.url), mistake);
  try {
    const setup = { ...chaos.setup, callbacks: { ...chaos.setup.callbacks, url: (tag: string) => `${gateway.url}/hook/${tag}` } };
    return await use(gateway.url, setup);
  } finally {
    await gateway.close();
  }
}

const actionsAt = (url: string, setup: TrafficSetup, client: RetryingClient) =>
  publishedActions(publishedContext(url, setup, client, chaos.record));
const random = () => 0.1;
const isPost = (exchange: Exchange, ending: string) => exchange.method === 'POST' && exchange.path.endsWith(ending);

async function decisionAnsweredTwice(client: RetryingClient) {
  await through(
    (exchange) => (isPost(exchange, '/reject') ? { answer: { status: 200, body: '{"decision":"reject","status":"running"}' } } : undefined),
    async (url, setup) => {
      const actions = actionsAt(url, setup, client);
      const run = await actions.startExecution('gate', random);
      if (!run || !(await actions.waitingAtApproval(run, random))) throw new Error('the gate never waited at its approval');
      await actions.decide(run, 'approve', random);
      await actions.decide(run, 'reject', random);
      planted.twice = `${run.executionId}: both approve and reject were answered 200`;
    },
  );
}

/**
 * An approve that claims the approval and answers 200 but never sends the decision on (the gateway answers it, the
 * claim is written to the store as the product writes it, without its lease): a stop then cancels the execution.
 */
async function decisionOvertakenByStop(client: RetryingClient) {
  await through(
    (exchange) =>
      isPost(exchange, '/approve') ? { answer: { status: 200, body: '{"decision":"approve","status":"running"}' } } : undefined,
    async (url, setup) => {
      const context = publishedContext(url, setup, client, chaos.record);
      const actions = publishedActions(context);
      const run = await actions.startExecution('gate', random);
      if (!run || !(await actions.waitingAtApproval(run, random))) throw new Error('the gate never waited at its approval');
      await actions.decide(run, 'approve', random, true);
      const store = dynamo();
      try {
        await store.send(
          new UpdateCommand({
            TableName: chaos.twin.twin.tables.executions,
            Key: { pk: `execution#${run.executionId}` },
            UpdateExpression: 'SET #status = :running',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':running': 'running' },
          }),
        );
      } finally {
        store.destroy();
      }
      await context.stop(run, 'race', random);
      planted.overtaken = `${run.executionId}: approve answered 200, then cancelled without its decision event`;
    },
  );
}

async function stopThatAppliedNothing(client: RetryingClient) {
  await through(
    (exchange) => (isPost(exchange, '/stop') ? { answer: { status: 200, body: '{"status":"cancelled"}' } } : undefined),
    async (url, setup) => {
      const context = publishedContext(url, setup, client, chaos.record);
      const run = await publishedActions(context).startExecution('echo', random);
      if (!run) throw new Error('the execution did not start');
      await context.stop(run, 'ended', random);
      planted.stopped = `${run.executionId}: a stop (ended) answered 200, the execution ended completed`;
    },
  );
}

async function keyDroppedOnTheWay(client: RetryingClient) {
  await through(
    () => ({ forward: { dropHeaders: ['idempotency-key'] } }),
    async (url, setup) => {
      const run = await actionsAt(url, setup, client).startExecution('echo', random, { concurrently: 'execute' });
      if (!run) throw new Error('the execution did not start');
      planted.key = `${run.idempotencyKey}: answered with`;
    },
  );
}

async function signatureDropped(client: RetryingClient) {
  await through(
    (exchange) => (exchange.path.startsWith('/hook/') ? { forward: { dropHeaders: ['webhook-signature'] } } : undefined),
    async (url, setup) => {
      const run = await actionsAt(url, setup, client).startExecution('echo', random, {
        callbackPlan: { behaviour: 'accept', secret: 'chaos-defect-secret' },
      });
      if (!run) throw new Error('the execution did not start');
      // The callback goes through the gateway after the execute's answer: the gateway stays until it went through.
      for (let wait = 0; chaos.setup.callbacks.deliveries(run.callback!.tag).length === 0 && wait < 600; wait++) await client.sleep(100);
      planted.unsigned = `${run.executionId}: signature unsigned`;
    },
  );
}

async function streamMissingAnEvent(client: RetryingClient) {
  await through(
    (exchange) =>
      isPost(exchange, '/workflows/echo/stream') ? { forward: { rewrite: (_status, body) => withoutEvent(body, 3) } } : undefined,
    async (url, setup) => {
      const actions = actionsAt(url, setup, client);
      const before = chaos.record.streams.length;
      await actions.stream('echo')(random)();
      const stream = chaos.record.streams.slice(before).find((one) => one.workflow === 'echo');
      planted.stream = `${stream?.executionId}: ids 1,2,4`;
    },
  );
}

async function lifecycleEndingWrong(client: RetryingClient) {
  const lastStatusFailed = (body: string) => {
    const at = body.lastIndexOf('"status":"completed"');
    return at === -1 ? body : `${body.slice(0, at)}"status":"failed"${body.slice(at + '"status":"completed"'.length)}`;
  };
  await through(
    (exchange) => (exchange.path.includes('/events') ? { forward: { rewrite: (_status, body) => lastStatusFailed(body) } } : undefined),
    async (url, setup) => {
      const before = chaos.record.subscriptions.length;
      await actionsAt(url, setup, client).subscription(random)();
      planted.lifecycle = `${chaos.record.subscriptions[before]?.executionId}: final status event`;
    },
  );
}

async function awsNameInA409(client: RetryingClient) {
  const leak = '{"detail":"ConditionalCheckFailedException: The conditional request failed"}';
  await through(
    (exchange) => (isPost(exchange, '/stop') ? { forward: { rewrite: (status, body) => (status === 409 ? leak : body) } } : undefined),
    async (url, setup) => {
      const context = publishedContext(url, setup, client, chaos.record);
      const run = await publishedActions(context).startExecution('echo', random);
      if (!run) throw new Error('the execution did not start');
      await context.stop(run, 'ended', random);
      planted.refusal = 'stop ended 409: names an AWS error';
    },
  );
}

async function requestNeverAnswered(client: RetryingClient) {
  await through(
    () => ({ hang: true }),
    async (url) => {
      const path = '/api/v1/published/workflows';
      await client.tracked('list workflows', `${url}${path}`, (signal) => fetch(`${url}${path}`, { signal })).catch(() => undefined);
      planted.hang = `list workflows ${path}: no answer`;
    },
  );
}

const dynamo = () =>
  DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: chaos.twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
  );

/** Acknowledged events of a kind sent to one link only, oldest first. */
const sentOnce = (kind: AcknowledgedEvent['kind']) =>
  [...chaos.record.events.values()].filter((event) => event.kind === kind && chaos.record.sent.get(event.externalId)?.size === 1);

/** As a put that resolved the wrong link's source would: the event stored again under another source of its type. */
async function storedTwiceUnderTwoSources() {
  const event = sentOnce('dialogs')[0]!;
  const other = chaos.setup.links.find((link) => link.kind === 'dialogs' && link.sourceId !== event.sourceId)!;
  const client = dynamo();
  try {
    await client.send(
      new PutCommand({
        TableName: chaos.twin.twin.tables.inboundEvents,
        Item: {
          source_id: other.sourceId,
          external_id: event.externalId,
          event_id: Number(event.eventId) + 2_000_000,
          state: 'handed_off',
        },
      }),
    );
  } finally {
    client.destroy();
  }
  planted.secondSource = `${event.externalId}: stored under source ${other.sourceId}`;
}

/** As a put without the deduplication condition would: the event stored again, over the first, under another id. */
async function storedUnderAnotherId() {
  const event = sentOnce('calls')[0]!;
  const client = dynamo();
  try {
    await client.send(
      new PutCommand({
        TableName: chaos.twin.twin.tables.inboundEvents,
        Item: {
          source_id: event.sourceId,
          external_id: event.externalId,
          event_id: Number(event.eventId) + 1_000_000,
          state: 'handed_off',
        },
      }),
    );
  } finally {
    client.destroy();
  }
  planted.otherId = `${event.externalId}: acknowledged as ${event.eventId}, stored as ${Number(event.eventId) + 1_000_000}`;
}

/**
 * Through the product's own hand-off store, as a second sweep that claimed what another had handed off would: one
 * conversation handed off again as it was, another handed off with its first message changed.
 */
async function handedOffAgainAndAltered() {
  const [again, altered] = sentOnce('dialogs').slice(1);
  const s3 = new S3Client({
    endpoint: chaos.twin.twin.s3_endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    forcePathStyle: true,
  });
  const stored = await readStoredState(chaos.dataDir);
  try {
    const handoffs = createHandoffStore(s3, chaos.twin.twin.bucket, fileAnnouncer(chaos.setup.announcementsFile));
    const conversation = async (event: AcknowledgedEvent) =>
      JSON.parse((await stored.handoff(event.sourceId, Number(event.eventId)))!) as NormalizedConversation;
    await handoffs.handOff(await conversation(again!));
    const changed = await conversation(altered!);
    changed.messages![0]!.text = 'a message nobody sent';
    await handoffs.handOff(changed);
  } finally {
    stored.close();
    s3.destroy();
  }
  planted.handedOffAgain = `handoff/${again!.sourceId}/${again!.eventId}.json: announced outside any sweep of its source`;
  planted.altered = `${altered!.externalId} (event ${altered!.eventId}): handed off with messages differ`;
}

/** As an engine that gave up on the first throttle would leave them: every completed echo execution failed. */
async function failedOnEveryFault() {
  const client = dynamo();
  try {
    for (const run of chaos.record.runs.values()) {
      if (run.workflow !== 'echo' || run.callback || run.stops.length > 0) continue;
      await client
        .send(
          new UpdateCommand({
            TableName: chaos.twin.twin.tables.executions,
            Key: { pk: `execution#${run.executionId}` },
            UpdateExpression: 'SET #status = :failed, #error = :error',
            ConditionExpression: '#status = :completed',
            ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
            ExpressionAttributeValues: { ':failed': 'failed', ':completed': 'completed', ':error': 'The step gave up after one throttle' },
          }),
        )
        .catch(() => undefined);
    }
  } finally {
    client.destroy();
  }
  planted.failed = 'executions failed, the faults account for';
}

import '#lib/twin/untraced-process.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import { DynamoDBClient, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { emptyCostUnits, onRequestCost, type CostUnits } from '#shared/metering/cost-meter.ts';
import { MAX_REQUESTS_PER_MINUTE_PER_LINK } from '#shared/limits.ts';
import { runCli } from '#lib/admin/cli.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/stores.ts';
import { startLocalTwin } from '#lib/twin/twin.ts';
import type { ServedRequest } from '#lib/twin/iam/front-door.ts';
import { sequentialSteps } from '../support/round-trips.ts';
import { executionArnOf } from '#shared/execution-arn.ts';
import { MAX_REQUESTS_PER_MINUTE_PER_KEY } from '#shared/limits.ts';
import { writeFileSync } from 'node:fs';
import { callEvent, textEvent } from '../support/events.ts';
import { runAtConcurrency, type RunStats } from './stats.ts';
import { streamingBench } from './streaming.ts';
import { collectionBench } from './collection.ts';
import { agentsBench } from './agents.ts';
import { cliBench } from './cli.ts';
import { ingestCostBench } from './ingest-cost.ts';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * `npm run bench`: ingest throughput and latency on the local twin at concurrency 16, beside the raw
 * PutItem rate of the same embedded DynamoDB in the same benchmark (their ratio is the figure that travels),
 * and the billed units per request as the handlers metered them.
 */
const CONCURRENCY = 16;
const CALL_REQUESTS = Number(process.env.BENCH_CALLS ?? 3000);
const DIALOG_REQUESTS = Number(process.env.BENCH_DIALOGS ?? 400);
/** The dialog floor's puts take a few ms each: this many make a run of about a second, not a fifth of one. */
const DIALOG_FLOOR_PUTS = Number(process.env.BENCH_DIALOG_PUTS ?? 1000);
const RAW_PUTS = Number(process.env.BENCH_PUTS ?? 3000);
const EXECUTES = Number(process.env.BENCH_EXECUTES ?? 400);
const LINEAR_NODES = 10;

const dataDir = mkdtempSync(join(tmpdir(), 'bench-'));
process.env.DATA_DIR = dataDir;
// The collection part fetches recordings from a local HTTPS server (its CA comes with NODE_EXTRA_CA_CERTS, see package.json).
process.env.ALLOW_LOOPBACK_RECORDINGS = '1';
// The agents part calls tools on a local server, as tests do.
process.env.ALLOW_LOOPBACK_TOOLS = '1';
/** Store requests, recorded only while a measurement asks for them. */
const storeRequests: ServedRequest[] = [];
let recordingStoreRequests = false;
const twin = await startLocalTwin({
  dataDir,
  host: '127.0.0.1',
  port: 0,
  onStoreRequest: (served) => void (recordingStoreRequests && storeRequests.push(served)),
});

async function recorded(principal: string, work: () => Promise<unknown>): Promise<ServedRequest[]> {
  storeRequests.length = 0;
  recordingStoreRequests = true;
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    recordingStoreRequests = false;
  }
  return storeRequests.filter((served) => served.principal === principal);
}

/** Sequential datastore round trips of one webhook request of each kind on a warm link (test/e2e/round-trips.test.ts pins them). */
async function roundTrips(): Promise<{ call: number; duplicate: number; dialog: number }> {
  const [callToken] = await linkPool('calls', 1);
  const [dialogToken] = await linkPool('dialogs', 1);
  const url = (token: string) => `${twin.webhookUrl}/api/v1/webhooks/${token}/events`;
  // Warm: the function read the link within its second of memory (LINK_CACHE_MS) and holds a block of event ids.
  const warm = (token: string, body: object) => post(url(token), JSON.stringify(body));
  const event = JSON.stringify(callEvent());
  await warm(callToken!, callEvent());
  const call = await recorded('WebhookPostEvent', () => post(url(callToken!), event));
  await warm(callToken!, callEvent());
  const duplicate = await recorded('WebhookPostEvent', () => post(url(callToken!), event));
  await warm(dialogToken!, textEvent(3));
  const dialog = await recorded('WebhookPostEvent', () => post(url(dialogToken!), JSON.stringify(textEvent(2000, {}, 120))));
  return { call: sequentialSteps(call), duplicate: sequentialSteps(duplicate), dialog: sequentialSteps(dialog) };
}
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

async function admin(...argv: string[]) {
  const result = await runCli([...argv, '--json']);
  if (result.exitCode !== 0) throw new Error(result.stdout);
  return JSON.parse(result.stdout) as Record<string, string>;
}

/** Each bound link's source id, by token: where its events are stored. */
const sourceIds = new Map<string, string>();

/** Enough bound links that no single one passes its 600 requests/minute during the benchmark. */
async function linkPool(type: 'calls' | 'dialogs', requests: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < Math.ceil(requests / (MAX_REQUESTS_PER_MINUTE_PER_LINK - 50)); i += 1) {
    const issued = await admin('links', 'issue', '--type', type);
    const bound = await admin('links', 'bind', issued.link_id!);
    sourceIds.set(issued.token!, bound.source_id!);
    tokens.push(issued.token!);
  }
  return tokens;
}

function post(url: string, body: string, headers: Record<string, string> = {}): Promise<number> {
  return send('POST', url, body, headers).then((answer) => answer.status);
}

function send(
  method: string,
  url: string,
  body: string | undefined,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const length = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
    const req = request(url, { method, agent, headers: { 'content-type': 'application/json', ...length, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const costs = new Map<string, { requests: number; units: CostUnits }>();
onRequestCost((operation, units) => {
  const entry = costs.get(operation) ?? { requests: 0, units: emptyCostUnits() };
  entry.requests += 1;
  for (const key of Object.keys(units) as (keyof CostUnits)[]) entry.units[key] += units[key];
  costs.set(operation, entry);
});

/**
 * Ingest at concurrency 16, after a warm-up pass of a third as many requests, as the floor gets one: the twin's first
 * requests compile the function's TypeScript in its worker and warm the JIT, which is not what a sender meets on a
 * warm Lambda. The link pool covers both passes within each link's 600 requests a minute.
 */
async function ingestRun(
  label: string,
  type: 'calls' | 'dialogs',
  total: number,
  makeBody: () => string,
): Promise<RunStats & { sourceId: string }> {
  const warmUp = Math.ceil(total / 3);
  const tokens = await linkPool(type, total + warmUp);
  const unexpected: number[] = [];
  const pass = async (requests: number) => {
    const bodies = Array.from({ length: requests }, makeBody);
    return runAtConcurrency(requests, CONCURRENCY, async (i) => {
      const status = await post(`${twin.webhookUrl}/api/v1/webhooks/${tokens[i % tokens.length]}/events`, bodies[i]!);
      if (status !== 201) unexpected.push(status);
    });
  };
  await pass(warmUp);
  costs.clear();
  const stats = await pass(total);
  if (unexpected.length > 0) throw new Error(`${label}: ${unexpected.length} answers were not 201 (${[...new Set(unexpected)].join(',')})`);
  const cost = costs.get('WebhookPostEvent');
  if (cost) {
    const per = (n: number) => (n / cost.requests).toFixed(2);
    console.log(
      `  ${label} units/request: DynamoDB RCU ${per(cost.units.dynamoReadUnits)}, WCU ${per(cost.units.dynamoWriteUnits)}, S3 PUT ${per(cost.units.s3WriteRequests)}`,
    );
  }
  return { ...stats, sourceId: sourceIds.get(tokens[0]!)! };
}

/**
 * The floor: the one write the webhook API's contract cannot do without (an event is stored before its 201), a
 * conditional PutItem (`attribute_not_exists`) of an item the size of the product's own event item (one the ingest run
 * stored, under new keys), after a warm-up pass, measured in the same benchmark as the product.
 */
async function floorRun(sourceId: string, label: string): Promise<RunStats> {
  const client = new DynamoDBClient({ endpoint: twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  const { Items } = await client.send(
    new QueryCommand({
      TableName: twin.twin.tables.inboundEvents,
      KeyConditionExpression: 'source_id = :s',
      ExpressionAttributeValues: { ':s': { S: sourceId } },
      Limit: 1,
    }),
  );
  const stored = Items?.[0];
  if (!stored) throw new Error(`floor (${label}): no stored event of ${sourceId} to copy`);
  const put = (pass: string) => (i: number) =>
    client
      .send(
        new PutItemCommand({
          TableName: twin.twin.tables.inboundEvents,
          Item: { ...stored, source_id: { S: `floor-${label}-${pass}` }, external_id: { S: `e-${i}` } },
          ConditionExpression: 'attribute_not_exists(source_id)',
        }),
      )
      .then(() => undefined);
  const total = label === 'dialog' ? DIALOG_FLOOR_PUTS : RAW_PUTS;
  await runAtConcurrency(Math.ceil(total / 3), CONCURRENCY, put('warm'));
  const stats = await runAtConcurrency(total, CONCURRENCY, put('measured'));
  client.destroy();
  return stats;
}

async function rawPutRun(): Promise<RunStats> {
  const client = new DynamoDBClient({ endpoint: twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  const item = JSON.stringify(callEvent());
  const stats = await runAtConcurrency(RAW_PUTS, CONCURRENCY, async (i) => {
    await client.send(
      new PutItemCommand({
        TableName: twin.twin.tables.inboundEvents,
        Item: { source_id: { S: 'bench-raw' }, external_id: { S: `raw-${i}` }, body: { S: item } },
      }),
    );
  });
  client.destroy();
  return stats;
}

/** Workflows for the engine figures: one llm node, and a linear chain of LINEAR_NODES llm nodes. */
function publishBenchWorkflows(): Promise<Record<string, string>> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-wf-'));
  const oneNode = {
    id: 'one',
    name: 'One node',
    start: 'reply',
    nodes: {
      reply: { type: 'llm', provider: 'scripted', reply: 'ok', next: 'done' },
      done: { type: 'end', output: '{{nodes.reply.output}}' },
    },
  };
  const chain: Record<string, unknown> = {};
  for (let i = 1; i <= LINEAR_NODES; i += 1)
    chain[`n${i}`] = { type: 'llm', provider: 'scripted', reply: `step ${i}`, next: i === LINEAR_NODES ? 'done' : `n${i + 1}` };
  chain.done = { type: 'end', output: `{{nodes.n${LINEAR_NODES}.output}}` };
  writeFileSync(join(dir, 'one.json'), JSON.stringify(oneNode));
  writeFileSync(join(dir, 'linear.json'), JSON.stringify({ id: 'linear', name: 'Linear', start: 'n1', nodes: chain }));
  return admin('publish', dir);
}

async function keyPool(requests: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < Math.ceil(requests / (MAX_REQUESTS_PER_MINUTE_PER_KEY - 50)); i += 1)
    keys.push((await admin('keys', 'create', '--name', `bench-${i}`, '--preset', 'full')).key!);
  return keys;
}

async function executeRun(label: string, workflowId: string, total: number, concurrency: number, keys: string[]) {
  const unexpected: string[] = [];
  const executionIds: string[] = [];
  costs.clear();
  const stats = await runAtConcurrency(total, concurrency, async (i) => {
    const answer = await send(
      'POST',
      `${twin.url}/api/v1/published/workflows/${workflowId}/execute`,
      JSON.stringify({ user_id: `user-${i % 50}`, input: { message: 'hi' } }),
      {
        authorization: `Bearer ${keys[i % keys.length]}`,
      },
    );
    const body = JSON.parse(answer.text) as { status?: string; execution_id?: string };
    if (answer.status !== 200 || body.status !== 'completed') unexpected.push(`${answer.status} ${body.status}`);
    else executionIds.push(body.execution_id!);
  });
  if (unexpected.length > 0)
    throw new Error(`${label}: ${unexpected.length} runs did not complete (${[...new Set(unexpected)].join(',')})`);
  const perRequest = (operation: string) => {
    const cost = costs.get(operation);
    if (!cost) return 'n/a';
    const per = (n: number) => (n / total).toFixed(2);
    return `RCU ${per(cost.units.dynamoReadUnits)}, WCU ${per(cost.units.dynamoWriteUnits)}, SFN API ${per(cost.units.stepFunctionsRequests)}`;
  };
  console.log(`  ${label} units/run: execute handler ${perRequest('PublishedExecute')}; step function ${perRequest('WorkflowStep')}`);
  return { stats, executionIds };
}

async function transitionsPerRun(executionIds: string[]): Promise<number> {
  // The transition counter reads the runner's event log, which trails the execution's result by a tick.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const counts = executionIds.map((id) => twin.stepFunctions.stateTransitions(executionArnOf(twin.twin.state_machine_arn, id)));
  return counts.reduce((sum, count) => sum + count, 0) / counts.length;
}

async function baselineRun(total: number, keys: string[]): Promise<RunStats> {
  return runAtConcurrency(total, 1, async (i) => {
    const answer = await send('GET', `${twin.url}/api/v1/published/workflows`, undefined, {
      authorization: `Bearer ${keys[i % keys.length]}`,
    });
    if (answer.status !== 200) throw new Error(`GET /workflows answered ${answer.status}`);
  });
}

const format = (label: string, stats: RunStats) =>
  `${label.padEnd(34)} ${stats.perSecond.toFixed(0).padStart(6)} req/s   p50 ${stats.p50Ms.toFixed(1).padStart(6)} ms   p99 ${stats.p99Ms.toFixed(1).padStart(6)} ms   (${stats.requests} in ${stats.seconds.toFixed(1)} s)`;

/** `BENCH_ONLY=streaming npm run bench` runs one part (ingest, execute, streaming, agents, collection, cli). */
const only = process.env.BENCH_ONLY;
/**
 * `npm run bench -- --json` ends with one JSON line of the headline figures (round trips and reads are counted
 * at the twin's front doors).
 */
const summary: Record<string, unknown> = {
  ingest_call_ratio: null,
  ingest_dialog_ratio: null,
  ingest_call_p99_ms: null,
  floor_p99_ms: null,
  execute_overhead_p50_ms: null,
  execute_reads_per_run: null,
  round_trips: { call: null, duplicate: null, dialog: null },
  stream_run_wire_ratio: null,
  idle_subscription_bytes_per_minute: null,
  idle_stream_reads_first_minute: null,
  idle_stream_reads_per_minute: null,
  abandoned_stream: null,
  ingest_usd_per_million: { call_events: null, dialogs: null },
};
const round2 = (value: number) => Math.round(value * 100) / 100;

async function ingest() {
  console.log(`Local twin ingest benchmark, concurrency ${CONCURRENCY}, Node ${process.version}`);
  const raw = await rawPutRun();
  const calls = await ingestRun('call event', 'calls', CALL_REQUESTS, () => JSON.stringify(callEvent()));
  const dialogBody = () => JSON.stringify(textEvent(2000, {}, 120));
  const dialogs = await ingestRun('2000-message dialog', 'dialogs', DIALOG_REQUESTS, dialogBody);
  console.log(format('raw DynamoDB PutItem (1 KB)', raw));
  console.log(format('POST /events, call (~0.5 KB)', calls));
  console.log(format(`POST /events, dialog (${(dialogBody().length / 1024).toFixed(0)} KB)`, dialogs));
  console.log(`ratio call ingest / raw PutItem: ${(calls.perSecond / raw.perSecond).toFixed(2)}`);
  console.log(`ratio dialog ingest / raw PutItem: ${(dialogs.perSecond / raw.perSecond).toFixed(2)}`);
  const callFloor = await floorRun(calls.sourceId, 'call');
  const dialogFloor = await floorRun(dialogs.sourceId, 'dialog');
  console.log(format('floor: conditional put, call-event item', callFloor));
  console.log(format('floor: conditional put, dialog item', dialogFloor));
  console.log(
    `ratio call ingest / floor: ${(calls.perSecond / callFloor.perSecond).toFixed(2)}; dialog ingest / floor: ${(dialogs.perSecond / dialogFloor.perSecond).toFixed(2)}`,
  );
  summary.ingest_usd_per_million = await ingestCostBench({ twin, admin });
  summary.round_trips = await roundTrips();
  console.log(`sequential round trips on a warm link: ${JSON.stringify(summary.round_trips)}`);
  Object.assign(summary, {
    ingest_call_ratio: round2(calls.perSecond / callFloor.perSecond),
    ingest_dialog_ratio: round2(dialogs.perSecond / dialogFloor.perSecond),
    ingest_call_p99_ms: round2(calls.p99Ms),
    floor_p99_ms: round2(callFloor.p99Ms),
  });
}

async function engine() {
  console.log(`\nWorkflow engine (local Step Functions runner, same ASL file)`);
  await publishBenchWorkflows();
  const keys = await keyPool(EXECUTES * 3 + 400);
  const baseline = await baselineRun(200, keys);
  let sequential!: Awaited<ReturnType<typeof executeRun>>;
  const executeReads = await recorded('PublishedExecute', async () => {
    sequential = await executeRun('one-node execute, concurrency 1', 'one', EXECUTES / 2, 1, keys);
  });
  const statusReads = executeReads.filter(
    (served) => served.operation === 'GetItem' && served.resource.endsWith(`table/${twin.twin.tables.executions}`),
  ).length;
  summary.execute_reads_per_run = round2(statusReads / (EXECUTES / 2));
  console.log(`execute status reads per run (strongly consistent GetItem): ${round2(statusReads / (EXECUTES / 2))}`);
  const parallel = await executeRun(`one-node execute, concurrency ${CONCURRENCY}`, 'one', EXECUTES, CONCURRENCY, keys);
  const linear = await executeRun(`${LINEAR_NODES}-node linear execute, concurrency 1`, 'linear', 50, 1, keys);
  console.log(format('GET /workflows (auth + 1 read), c=1', baseline));
  console.log(format('execute one-node, c=1', sequential.stats));
  console.log(format(`execute one-node, c=${CONCURRENCY}`, parallel.stats));
  console.log(format(`execute ${LINEAR_NODES}-node linear, c=1`, linear.stats));
  console.log(
    `execute overhead over an authenticated read (c=1): p50 +${(sequential.stats.p50Ms - baseline.p50Ms).toFixed(1)} ms, p99 +${(sequential.stats.p99Ms - baseline.p99Ms).toFixed(1)} ms`,
  );
  summary.execute_overhead_p50_ms = round2(sequential.stats.p50Ms - baseline.p50Ms);
  console.log(
    `state transitions per run: one-node ${(await transitionsPerRun(sequential.executionIds)).toFixed(1)}, ${LINEAR_NODES}-node linear ${(await transitionsPerRun(linear.executionIds)).toFixed(1)}`,
  );
}

try {
  if (only === undefined || only === 'ingest') await ingest();
  if (only === undefined || only === 'execute') await engine();
  if (only === undefined || only === 'streaming') {
    console.log(`\nStreaming (SSE over the execution's event log), one execution at a time`);
    const dynamo = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
    );
    const bytes = await streamingBench({ twin, dynamo, admin, costs, recorded });
    Object.assign(summary, {
      stream_run_wire_ratio: round2(bytes.run.ratio),
      idle_subscription_bytes_per_minute: Math.round(bytes.idle.bytes_per_minute),
      idle_stream_reads_first_minute: bytes.idleStream,
      idle_stream_reads_per_minute: { approval: bytes.idleWindow.approval.per_minute, silent_run: bytes.idleWindow.silent_run.per_minute },
      abandoned_stream: { window_seconds: bytes.idleWindow.window_seconds, ...bytes.idleWindow.abandoned },
    });
    dynamo.destroy();
  }
  if (only === undefined || only === 'agents') {
    console.log(`\nAgents (execute, one execution at a time)`);
    await agentsBench({ twin, admin });
  }
  if (only === undefined || only === 'collection') {
    console.log(`\nNightly collection (one sweep per task through the local state machine; recordings over local HTTPS)`);
    const dynamo = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
      {
        marshallOptions: { removeUndefinedValues: true },
      },
    );
    await collectionBench({ twin, dynamo, admin });
    dynamo.destroy();
  }
  if (only === undefined || only === 'cli') {
    console.log(`\nAdmin CLI (each call a process of its own, as an operator runs it)`);
    summary.cli = await cliBench(dataDir);
  }
  if (process.argv.includes('--json')) console.log(JSON.stringify(summary));
} finally {
  agent.destroy();
  await twin.close();
  rmSync(dataDir, { recursive: true, force: true });
}

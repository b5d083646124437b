import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { emptyCostUnits, onRequestCost, type CostUnits } from '../../functions/shared/cost-meter.ts';
import { MAX_REQUESTS_PER_MINUTE_PER_LINK } from '../../functions/shared/limits.ts';
import { runCli } from '../../lib/admin/cli.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/stores.ts';
import { startLocalTwin } from '../../lib/local/twin.ts';
import { callEvent, textEvent } from '../support/events.ts';
import { runAtConcurrency, type RunStats } from './stats.ts';

/**
 * `npm run bench`: ingest throughput and latency on the local twin at concurrency 16, beside the raw
 * PutItem rate of the same embedded DynamoDB in the same run (their ratio is the figure that travels),
 * and the billed units per request as the handlers metered them.
 */
const CONCURRENCY = 16;
const CALL_REQUESTS = Number(process.env.BENCH_CALLS ?? 3000);
const DIALOG_REQUESTS = Number(process.env.BENCH_DIALOGS ?? 200);
const RAW_PUTS = Number(process.env.BENCH_PUTS ?? 3000);

const dataDir = mkdtempSync(join(tmpdir(), 'bench-'));
process.env.DATA_DIR = dataDir;
const twin = await startLocalTwin({ dataDir, host: '127.0.0.1', port: 0 });
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

async function admin(...argv: string[]) {
  const result = await runCli([...argv, '--json']);
  if (result.exitCode !== 0) throw new Error(result.stdout);
  return JSON.parse(result.stdout) as Record<string, string>;
}

/** Enough bound links that no single one passes its 600 requests/minute during the run. */
async function linkPool(type: 'calls' | 'dialogs', requests: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < Math.ceil(requests / (MAX_REQUESTS_PER_MINUTE_PER_LINK - 50)); i += 1) {
    const issued = await admin('links', 'issue', '--type', type);
    await admin('links', 'bind', issued.link_id!);
    tokens.push(issued.token!);
  }
  return tokens;
}

function post(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
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

async function ingestRun(label: string, type: 'calls' | 'dialogs', total: number, makeBody: () => string): Promise<RunStats> {
  const tokens = await linkPool(type, total);
  const bodies = Array.from({ length: total }, makeBody);
  const unexpected: number[] = [];
  costs.clear();
  const stats = await runAtConcurrency(total, CONCURRENCY, async (i) => {
    const status = await post(`${twin.url}/api/v1/webhooks/${tokens[i % tokens.length]}/events`, bodies[i]!);
    if (status !== 201) unexpected.push(status);
  });
  if (unexpected.length > 0) throw new Error(`${label}: ${unexpected.length} answers were not 201 (${[...new Set(unexpected)]})`);
  const cost = costs.get('WebhookPostEvent');
  if (cost) {
    const per = (n: number) => (n / cost.requests).toFixed(2);
    console.log(`  ${label} units/request: DynamoDB RCU ${per(cost.units.dynamoReadUnits)}, WCU ${per(cost.units.dynamoWriteUnits)}, S3 PUT ${per(cost.units.s3WriteRequests)}`);
  }
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

const format = (label: string, stats: RunStats) =>
  `${label.padEnd(34)} ${stats.perSecond.toFixed(0).padStart(6)} req/s   p50 ${stats.p50Ms.toFixed(1).padStart(6)} ms   p99 ${stats.p99Ms.toFixed(1).padStart(6)} ms   (${stats.requests} in ${stats.seconds.toFixed(1)} s)`;

try {
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
} finally {
  agent.destroy();
  await twin.close();
  rmSync(dataDir, { recursive: true, force: true });
}

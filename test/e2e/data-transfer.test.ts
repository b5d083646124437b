import { mkdtempSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import type { CostReport } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';
import { API_GATEWAY_HEADER_BYTES } from '#shared/metering/data-transfer-meter.ts';
import { apiUrlFor } from '../support/api-urls.ts';
import { callEvent } from '../support/events.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { expectDocumented } from '../support/openapi.ts';
import { createKey, publishFixtures } from '../support/published.ts';

/**
 * Data transfer out on the twin: the bytes the client reads off the socket for a buffered GET, a streamed run and a
 * blocking execute (its whitespace heartbeats included), against the bytes the usage table recorded for each request.
 * The count is defined in functions/shared/metering/data-transfer-meter.ts: the body exactly, the status line and
 * the function's headers exactly, the framing header (`Content-Length` or `Transfer-Encoding`) exactly, and in place
 * of the twin's own headers (Date, Connection, Keep-Alive) API Gateway's, a fixed estimate. Then the cost report's
 * data transfer line against a hand calculation from the metered bytes.
 */
const PROJECT = 'transfer';
const sheet = loadPriceSheet();
/**
 * The header lines Node's HTTP server writes on the twin (capitalized; the product's own headers are lower case), where
 * API Gateway writes its own (API_GATEWAY_HEADER_BYTES) and its framing: the twin sends every answer chunked, API
 * Gateway a buffered answer with its Content-Length.
 */
const TWIN_SERVER_HEADERS = ['Date', 'Connection', 'Keep-Alive', 'Transfer-Encoding', 'Content-Length'];

let twin: TestTwin;

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  /** Everything up to and including the blank line, as received. */
  head: Buffer;
  /** The body as the client reads it (a chunked one decoded). */
  body: Buffer;
}

/** One request on a fresh connection, read to its end byte for byte; the answer is checked against the OpenAPI document. */
function exchange(method: string, path: string, headers: Record<string, string>, body?: string): Promise<RawAnswer> {
  const url = new URL(apiUrlFor(twin, path));
  const lines = [
    `${method} ${url.pathname} HTTP/1.1`,
    `Host: ${url.host}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  if (body !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        const answer = parseAnswer(Buffer.concat(chunks));
        const text = (answer.headers['content-encoding'] === 'gzip' ? gunzipSync(answer.body) : answer.body).toString('utf8');
        expectDocumented({ method, url: url.toString() }, { status: answer.status, headers: answer.headers, text });
        resolve(answer);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
    socket.write(`${lines.join('\r\n')}\r\n\r\n${body ?? ''}`);
  });
}

function parseAnswer(raw: Buffer): RawAnswer {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error('no whole HTTP answer');
  const head = raw.subarray(0, end + 4);
  const [statusLine, ...lines] = head.toString('latin1').trimEnd().split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  let rest = raw.subarray(end + 4);
  const parts: Buffer[] = [];
  if (headers['transfer-encoding'] === 'chunked') {
    for (;;) {
      const lineEnd = rest.indexOf('\r\n');
      const size = parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
      if (!(size > 0)) break;
      parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      rest = rest.subarray(lineEnd + 2 + size + 2);
    }
  } else {
    parts.push(rest.subarray(0, Number(headers['content-length'])));
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, head, body: Buffer.concat(parts) };
}

/**
 * What the meter counts for an answer received on the twin: the head and body as received, the twin server's own
 * header lines giving way to API Gateway's (estimated) and to its framing header.
 */
function countedBytes(answer: RawAnswer, kind: 'buffered' | 'streamed'): number {
  const serverLines = answer.head
    .toString('latin1')
    .split('\r\n')
    .filter((line) => TWIN_SERVER_HEADERS.includes(line.slice(0, line.indexOf(':'))))
    .reduce((sum, line) => sum + Buffer.byteLength(line, 'latin1') + 2, 0);
  const framing = kind === 'buffered' ? `Content-Length: ${answer.body.byteLength}\r\n` : 'Transfer-Encoding: chunked\r\n';
  return answer.head.byteLength - serverLines + Buffer.byteLength(framing) + API_GATEWAY_HEADER_BYTES + answer.body.byteLength;
}

/** The data transfer bytes in a subject's usage items (every shard of every day). */
async function recordedBytes(subject: string): Promise<number> {
  const { Items = [] } = await twin.dynamo.send(
    new QueryCommand({
      TableName: twin.twin.tables.usage,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': subject },
    }),
  );
  return Items.reduce((sum, item) => sum + Number(item.data_transfer_out_bytes ?? 0), 0);
}

/** Sends one request, waits until its invocations have written their usage, and answers what it received and what was recorded. */
async function measured(subject: string, send: () => Promise<RawAnswer>): Promise<{ answer: RawAnswer; recorded: number }> {
  const before = await recordedBytes(subject);
  const answer = await send();
  await twin.settled();
  return { answer, recorded: (await recordedBytes(subject)) - before };
}

/** What each kind of answer counts, as lib/pricing/README.md quotes it ("Bytes per answer", with no stream padding). */
const DOCUMENTED_BYTES = { event: 410, refusal: 370, workflows: 780, execute: 960, stream: 1330 };
type Measured = { answer: RawAnswer; recorded: number };
let list: Measured;
let compressed: Measured;
let stream: Measured;
let execute: Measured;
let refused: Measured;
let unknownKey: Measured;
/** Four call events on one link: what each answer counts, and what the link's usage recorded for all four. */
let events: { counted: number[]; recorded: number; statuses: number[] };
let report: CostReport;
/** Every data transfer byte in the usage table, once all the requests above have settled. */
let metered: number;

beforeAll(async () => {
  twin = await startTestTwin();
  await publishFixtures(twin, PROJECT);
  const key = (await createKey(twin, 'full', { project: PROJECT })).key;
  const auth = { Authorization: `Bearer ${key}` };
  const project = `project#${PROJECT}`;
  list = await measured(project, () => exchange('GET', '/api/v1/published/workflows', auth));
  stream = await measured(project, () =>
    exchange('POST', '/api/v1/published/workflows/echo/stream', auth, JSON.stringify({ user_id: 'u1', input: { message: 'hello' } })),
  );
  execute = await measured(project, () =>
    exchange(
      'POST',
      '/api/v1/published/workflows/support-bot/execute',
      auth,
      JSON.stringify({ user_id: 'u2', input: { message: 'refund' } }),
    ),
  );
  // An execution whose output passes the API's minimumCompressionSize: its poll goes out gzip-encoded to a caller that takes it.
  const long = await measured(project, () =>
    exchange(
      'POST',
      '/api/v1/published/workflows/echo/execute',
      auth,
      JSON.stringify({ user_id: 'u3', input: { message: 'x'.repeat(4000) } }),
    ),
  );
  const longId = (JSON.parse(long.answer.body.toString('utf8')) as { execution_id: string }).execution_id;
  compressed = await measured(project, () =>
    exchange('GET', `/api/v1/published/executions/${longId}`, { ...auth, 'Accept-Encoding': 'gzip' }),
  );
  refused = await measured(project, () => exchange('GET', '/api/v1/published/workflows/no-such-workflow', auth));
  unknownKey = await measured(project, () => exchange('GET', '/api/v1/published/workflows', { Authorization: 'Bearer pk_not_a_key' }));
  const link = await boundLink(twin, 'calls');
  const sent: RawAnswer[] = [];
  for (let i = 0; i < 4; i++)
    sent.push(
      (
        await measured(`link#${link.linkId}`, () =>
          exchange('POST', `/api/v1/webhooks/${link.token}/events`, {}, JSON.stringify(callEvent())),
        )
      ).answer,
    );
  events = {
    counted: sent.map((answer) => countedBytes(answer, 'buffered')),
    recorded: await recordedBytes(`link#${link.linkId}`),
    statuses: sent.map((answer) => answer.status),
  };

  const { Items = [] } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.usage }));
  metered = Items.reduce((sum, item) => sum + Number(item.data_transfer_out_bytes ?? 0), 0);
  const answer = await runCli(['cost', 'report', '--json']);
  expect(answer.exitCode, answer.stdout + answer.stderr).toBe(0);
  report = JSON.parse(answer.stdout) as CostReport;
}, 120_000);
afterAll(() => twin?.close());

describe('the bytes of each answer, as recorded in the usage table', () => {
  it("are a buffered GET's status line, headers and body as the client read them", () => {
    expect(list.answer.status).toBe(200);
    expect(list.recorded).toBe(countedBytes(list.answer, 'buffered'));
  });

  it('are the compressed bytes of an answer API Gateway compresses, not the bytes the function returned', () => {
    expect(compressed.answer.status).toBe(200);
    expect(compressed.answer.headers['content-encoding']).toBe('gzip');
    expect(compressed.recorded).toBe(countedBytes(compressed.answer, 'buffered'));
    expect(JSON.parse(gunzipSync(compressed.answer.body).toString('utf8'))).toMatchObject({ status: 'completed' });
    expect(compressed.answer.body.byteLength).toBeLessThan(1000);
  });

  it('are every byte of a streamed run the client read, its head included', () => {
    expect(stream.answer.status).toBe(200);
    expect(stream.answer.headers['transfer-encoding']).toBe('chunked');
    expect(stream.answer.body.toString('utf8')).toMatch(/"status":"completed"/);
    expect(stream.recorded).toBe(countedBytes(stream.answer, 'streamed'));
  });

  it("are a blocking execute's whitespace and its document", () => {
    expect(execute.answer.status).toBe(200);
    expect(JSON.parse(execute.answer.body.toString('utf8'))).toMatchObject({ status: 'interrupted' });
    expect(execute.recorded).toBe(countedBytes(execute.answer, 'streamed'));
  });

  it("are a refused request's when someone is billed for it, and nothing when nobody is", () => {
    expect(refused.answer.status).toBe(404);
    expect(refused.recorded).toBe(countedBytes(refused.answer, 'buffered'));
    expect(unknownKey.answer.status).toBe(401);
    expect(unknownKey.recorded).toBe(0);
  });

  it("are a webhook request's, carried by the next request of its function when its usage needs no write of its own", () => {
    expect(events.statuses).toEqual([201, 201, 201, 201]);
    // Each answer is recorded once: by its own request when that one writes a usage correction anyway (a new block of
    // event ids), else by the next; only the last may still wait for a request after it.
    const sum = events.counted.reduce((total, bytes) => total + bytes, 0);
    expect([sum, sum - events.counted.at(-1)!]).toContain(events.recorded);
  });

  it('are the sizes lib/pricing/README.md quotes per answer, within 20 %', () => {
    const counted = {
      event: events.counted[0]!,
      refusal: refused.recorded,
      workflows: list.recorded,
      execute: execute.recorded,
      stream: stream.recorded,
    };
    for (const [kind, bytes] of Object.entries(DOCUMENTED_BYTES)) {
      expect(counted[kind as keyof typeof counted], kind).toBeGreaterThan(bytes * 0.8);
      expect(counted[kind as keyof typeof counted], kind).toBeLessThan(bytes * 1.2);
    }
  });
});

describe("the cost report's data transfer line", () => {
  const line = () => report.services.find((service) => service.service === 'Data transfer out')!;

  it("prices the metered bytes at the sheet's $/GB: bytes / 2^30 × $0.09 within 2 %", () => {
    expect(sheet.units.dataTransferOutBytes.lines[0]).toMatchObject({ usd: 0.09, per: 'GB' });
    const byHand = (metered / 2 ** 30) * 0.09;
    expect(metered).toBeGreaterThan(0);
    expect(line().units).toBe(metered);
    expect(Math.abs(line().usd - byHand)).toBeLessThanOrEqual(byHand * 0.02);
    expect(report.data_transfer_out).toMatchObject({ service: 'Data transfer out', bytes: metered, usd_per_gb: 0.09 });
    expect(Math.abs(report.data_transfer_out.usd - byHand)).toBeLessThanOrEqual(byHand * 0.02);
  });

  it('is a row of the CSV and of the HTML page', async () => {
    const csv = (await runCli(['cost', 'report', '--csv'])).stdout.split('\r\n');
    expect(csv).toContain(`Data transfer out,${metered},${line().usd.toFixed(8)},,,,,,AWS Data Transfer,DataTransfer-Out-Bytes`);
    const file = join(mkdtempSync(join(tmpdir(), 'transfer-')), 'cost.html');
    expect((await runCli(['cost', 'report', '--html', file, '--json'])).exitCode).toBe(0);
    expect(readFileSync(file, 'utf8')).toMatch(/<td>Data transfer out<\/td>/);
  });

  it("is in the estimate's run average: each execution carries its project's answers", async () => {
    const answer = await runCli(['cost', 'estimate', '--runs', '1000', '--json']);
    const estimate = JSON.parse(answer.stdout) as { averages: { run: { usd: number; data_transfer_usd: number } } };
    expect(estimate.averages.run.data_transfer_usd).toBeGreaterThan(0);
    expect(estimate.averages.run.data_transfer_usd).toBeLessThan(estimate.averages.run.usd);
  });
});

import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import type { CostReport } from '#lib/pricing/cost-report.ts';
import { alarmMetricCount } from '#lib/pricing/fixed-costs.ts';
import { customMetricCount } from '#shared/lambda/custom-metrics.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';
import { callEvent } from '../support/events.ts';
import { postJson } from '../support/http.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { createKey, publishedClient, publishFixtures } from '../support/published.ts';
import { openSse } from '../support/sse.ts';

/**
 * The cost report against a known mix on the twin: N webhook call events, M runs with an approval, K streamed runs.
 * The expected figure is worked out here by hand from the price sheet and the units per operation lib/pricing/README.md
 * documents ("What it costs"); the report must agree within 10 %.
 */
const N = 20;
const M = 3;
const K = 2;
const PROJECT = 'costed';
const sheet = loadPriceSheet();
const price = (units: Record<string, number>) =>
  Object.entries(units).reduce((sum, [name, count]) => sum + count * sheet.units[name as keyof typeof sheet.units].usd_per_unit, 0);
/**
 * Model tokens are priced per model, not by the aggregate counters (which the sheet prices at 0): the fixtures' runs
 * use the scripted (offline) model, its own line at the sheet's `scripted` price, $0.
 */
const scriptedOutput = (tokens: number) => (tokens * sheet.models.scripted!.output_usd_per_million!) / 1_000_000;

/**
 * Units per operation, as lib/pricing/README.md documents them. Lambda time is the one figure that varies with the machine;
 * it is a small share of each total, so it is taken as documented (GB-ms at 256 MB).
 */
const CALL_EVENT = {
  // The webhook API is an HTTP API, priced apart from the Published API's REST API.
  httpApiRequests: 1,
  lambdaInvocations: 1,
  lambdaGbMs: 10,
  dynamoReadUnits: 0,
  dynamoWriteUnits: 3,
  storedBytes: 1.3 * 1024,
  logBytes: 512,
  dataTransferOutBytes: 410,
};
/** POST execute (interrupted at the approval) and POST approve; the execution's two steps and its AwaitApproval. */
const APPROVAL_RUN = {
  apiRequests: 2,
  lambdaInvocations: 5,
  lambdaGbMs: 200,
  dynamoReadUnits: 8,
  dynamoWriteUnits: 20,
  storedBytes: 8 * 1024,
  stateTransitions: 7,
  modelCalls: 1,
  outputTokens: 3,
  // The execute's answer (~960 bytes) and the approval's.
  dataTransferOutBytes: 1400,
};
/** POST stream of the echo workflow, and its one step. */
const STREAMED_RUN = {
  apiRequests: 1,
  lambdaInvocations: 2,
  lambdaGbMs: 100,
  dynamoReadUnits: 6,
  dynamoWriteUnits: 10,
  storedBytes: 5 * 1024,
  stateTransitions: 4,
  modelCalls: 1,
  outputTokens: 2,
  dataTransferOutBytes: 1330,
};

let twin: TestTwin;
let linkId: string;
let report: CostReport;

async function waitForStatus(executionId: string, status: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const { Item } = await twin.dynamo.send(
      new GetCommand({ TableName: twin.twin.tables.executions, Key: { pk: `execution#${executionId}` } }),
    );
    if (Item?.status === status) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`execution ${executionId} did not reach ${status}`);
}

/** The cells of a CSV row (RFC 4180: a quoted cell may hold commas and doubled quotes). */
function csvCells(row: string): string[] {
  return [...`${row},`.matchAll(/("(?:[^"]|"")*"|[^,]*),/g)].map(([, cell]) =>
    cell!.startsWith('"') ? cell!.slice(1, -1).replaceAll('""', '"') : cell!,
  );
}

async function admin(...argv: string[]) {
  const result = await runCli(argv);
  expect(result.exitCode, result.stdout + result.stderr).toBe(0);
  return result.stdout;
}

beforeAll(async () => {
  twin = await startTestTwin();
  await publishFixtures(twin, PROJECT);
  const key = (await createKey(twin, 'full', { project: PROJECT })).key;
  const client = publishedClient(twin, key);
  const link = await boundLink(twin, 'calls');
  linkId = link.linkId;
  for (let i = 0; i < N; i++)
    expect((await postJson(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`, callEvent())).status).toBe(201);
  for (let i = 0; i < M; i++) {
    const started = await client.execute('support-bot', { user_id: `u${i}`, input: { message: 'refund' } });
    expect(started.body.status).toBe('interrupted');
    expect((await client.approve(started.body.execution_id, { feedback: 'ok' })).status).toBe(200);
    // Waited for on the table, not through the API: each status poll would be one more metered request.
    await waitForStatus(started.body.execution_id as string, 'completed');
  }
  for (let i = 0; i < K; i++) {
    const stream = await openSse(`${twin.url}/api/v1/published/workflows/echo/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: { user_id: 's', input: { message: 'hi' } },
    });
    await stream.ended;
    expect(stream.events.at(-1)!.data.status).toBe('completed');
  }
  // A stream ends with its last event, an execution's record is final before its step ends: each invocation writes its usage
  // just after. The report waits for every function of the twin to end (failing, naming them, past a generous deadline).
  await twin.settled();
  report = JSON.parse(await admin('cost', 'report', '--json')) as CostReport;
}, 120_000);
afterAll(() => twin?.close());

describe('cost report', () => {
  it('agrees within 10 % with the hand calculation from the price sheet and the documented units', () => {
    const models = scriptedOutput(M * APPROVAL_RUN.outputTokens + K * STREAMED_RUN.outputTokens);
    // Lambda's duration is the machine's (a cold start on a loaded machine takes seconds): compared without it.
    const compute = report.services.find((service) => service.service === 'Lambda compute')!;
    const withoutCompute = (units: Record<string, number>) => price({ ...units, lambdaGbMs: 0 });
    const expected = N * withoutCompute(CALL_EVENT) + M * withoutCompute(APPROVAL_RUN) + K * withoutCompute(STREAMED_RUN) + models;
    // Key creation, link binding and publishing are the operator's, outside the API: not metered.
    expect(report.total_usd - compute.usd).toBeGreaterThan(expected * 0.9);
    expect(report.total_usd - compute.usd).toBeLessThan(expected * 1.1);
    expect(compute.units).toBeGreaterThan(0);
    // The link's share of the compute is at most all of it.
    expect(report.per_million_webhook_events).toBeGreaterThan(withoutCompute(CALL_EVENT) * 1e6 * 0.9);
    expect(report.per_million_webhook_events).toBeLessThan(withoutCompute(CALL_EVENT) * 1e6 * 1.1 + (compute.usd / N) * 1e6);
  });

  it('shows services, subjects, runs and the fixed monthly cost: alarms, the dashboard, the key, custom metrics and the dead-letter queue', () => {
    expect(report.price_sheet).toMatchObject({ region: 'us-east-1', date: sheet.date });
    const services = Object.fromEntries(report.services.map((service) => [service.service, service]));
    expect(services['API Gateway']!.units).toBe(M * APPROVAL_RUN.apiRequests + K * STREAMED_RUN.apiRequests);
    const httpApi = services[sheet.units.httpApiRequests.lines[0]!.line]!;
    expect(httpApi.units).toBe(N * CALL_EVENT.httpApiRequests);
    expect(httpApi.usd).toBeCloseTo(N * sheet.units.httpApiRequests.usd_per_unit, 10);
    expect(services['Lambda requests']!.units).toBe(N + M * APPROVAL_RUN.lambdaInvocations + K * STREAMED_RUN.lambdaInvocations);
    // StartExecution and task responses are free: the Step Functions dollars are the transitions alone.
    // Every answer's bytes (test/e2e/data-transfer.test.ts checks them byte for byte), at the sheet's price per GB.
    expect(services['Data transfer out']!.units).toBeGreaterThan(N * 300 + M * 1000 + K * 1000);
    expect(services['Data transfer out']!.usd).toBeCloseTo(
      services['Data transfer out']!.units * sheet.units.dataTransferOutBytes.usd_per_unit,
      8,
    );
    expect(services['Step Functions']!.usd).toBeCloseTo(
      (M * APPROVAL_RUN.stateTransitions + K * STREAMED_RUN.stateTransitions) * sheet.units.stateTransitions.usd_per_unit,
      10,
    );
    expect(report.subjects.map((subject) => subject.subject).sort()).toEqual([`link#${linkId}`, `project#${PROJECT}`]);
    expect(report.per_run.runs).toBe(M + K);
    expect(report.per_run.p95_usd!).toBeGreaterThanOrEqual(report.per_run.mean_usd!);
    // The scripted model is a line of its own, at $0: no longer priced as a Bedrock model.
    expect(report.models).toEqual([
      {
        model: 'scripted',
        input_tokens: 0,
        output_tokens: M * APPROVAL_RUN.outputTokens + K * STREAMED_RUN.outputTokens,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        images: 0,
        usd: 0,
        priced: true,
        source: sheet.models.scripted!.source,
      },
    ]);
    expect(services['Bedrock tokens']!.usd).toBe(0);
    expect(report.fixed_monthly_usd.map((fixed) => fixed.item)).toEqual([
      'CloudWatch alarms',
      'CloudWatch dashboard',
      'KMS key (alarm topic)',
      'CloudWatch custom metrics',
      'SQS dead-letter queue (nightly schedule)',
    ]);
    expect(report.fixed_monthly_usd[3]).toEqual({
      item: 'CloudWatch custom metrics',
      count: customMetricCount(),
      usd: Math.round(customMetricCount() * 30) / 100,
    });
    expect(report.fixed_monthly_usd[0]).toEqual({
      item: 'CloudWatch alarms',
      count: alarmMetricCount(),
      usd: Math.round(alarmMetricCount() * 10) / 100,
    });
  });

  it('narrows to a link or a project, and writes a CSV a spreadsheet opens', async () => {
    const byLink = JSON.parse(await admin('cost', 'report', '--link', linkId, '--json')) as CostReport;
    expect(byLink.subjects.map((subject) => subject.subject)).toEqual([`link#${linkId}`]);
    expect(byLink.per_million_webhook_events).toBe(report.per_million_webhook_events);
    const byProject = JSON.parse(await admin('cost', 'report', '--project', PROJECT, '--json')) as CostReport;
    expect(byProject.per_million_webhook_events).toBeNull();
    expect(byProject.total_usd + byLink.total_usd).toBeCloseTo(report.total_usd, 7);

    const csv = await admin('cost', 'report', '--csv');
    const rows = csv.trimEnd().split('\r\n').map(csvCells);
    // The first three columns as they always were; a model row's tokens of each kind and images at the end.
    expect(rows[0]).toEqual([
      'service',
      'units',
      'usd',
      'input_tokens',
      'output_tokens',
      'cache_read_tokens',
      'cache_write_tokens',
      'images',
      'aws_service',
      'usage_type',
    ]);
    expect(rows.every((row) => row.length === 10)).toBe(true);
    // Every model here is priced (the scripted one): no unpriced-models row.
    expect(rows.some((row) => row[0] === 'unpriced models')).toBe(false);
    expect(rows.find((row) => row[0] === 'total')![2]).toBe(report.total_usd.toFixed(8));
    expect(rows.filter((row) => !Number.isNaN(Number(row[2])) && row[0] !== 'service').length).toBeGreaterThanOrEqual(
      report.services.length + 1,
    );
  });

  it('refuses bad dates and both subjects at once as usage mistakes', async () => {
    expect((await runCli(['cost', 'report', '--from', 'yesterday', '--json'])).exitCode).toBe(2);
    expect((await runCli(['cost', 'report', '--from', '2026-02-01', '--to', '2026-01-01', '--json'])).exitCode).toBe(2);
    expect((await runCli(['cost', 'report', '--project', 'a', '--link', 'lnk_b', '--json'])).exitCode).toBe(2);
  });
});

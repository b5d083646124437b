import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COST_UNIT_NAMES } from '#shared/metering/cost-meter.ts';
import type { CostReport } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';
import { callEvent, textEvent } from '../support/events.ts';
import { postJson } from '../support/http.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { PUBLISHED, PUBLISHED_MODELS } from '../support/published-prices.ts';
import { createKey, publishedClient } from '../support/published.ts';
import { openSse } from '../support/sse.ts';

/**
 * Mixed traffic through the twin (call events, small dialogs and their nightly collection, a blocking and a streamed
 * execution of a workflow calling a Bedrock model), then `cost report --json`: every line must cost its units at AWS's
 * published price per unit (test/support/published-prices.ts, written from AWS's pages, never read from the sheet),
 * and each model its tokens at that model's published price. Only which line a meter's units land on is read from the
 * sheet: what it costs is not.
 */
const PROJECT = 'list-priced';
const LITE = 'amazon.nova-lite-v1:0';
const USAGE = { inputTokens: 900, outputTokens: 120 };
const WORKFLOW = {
  id: 'ask',
  name: 'Ask',
  start: 'answer',
  nodes: {
    answer: { type: 'llm', provider: 'bedrock', model_id: LITE, prompt: '{{input.message}}', next: 'done' },
    done: { type: 'end', output: { answer: '{{nodes.answer.output}}' } },
  },
};

let twin: TestTwin;
let report: CostReport;

beforeAll(async () => {
  twin = await startTestTwin();
  const dir = mkdtempSync(join(tmpdir(), 'list-priced-'));
  writeFileSync(join(dir, 'ask.json'), JSON.stringify(WORKFLOW));
  await twin.admin('publish', dir, '--project', PROJECT);
  const key = (await createKey(twin, 'full', { project: PROJECT })).key;
  twin.bedrock.reset();
  twin.bedrock.scriptConverse(LITE, [
    { text: ['Blocking ', 'answer.'], usage: USAGE },
    { text: ['Streamed ', 'answer.'], usage: USAGE },
  ]);
  const blocking = await publishedClient(twin, key).execute('ask', { user_id: 'u', input: { message: 'Which plan?' } });
  expect(blocking.status, blocking.text).toBe(200);
  expect(blocking.body).toMatchObject({ status: 'completed' });
  const stream = await openSse(`${twin.url}/api/v1/published/workflows/ask/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: { user_id: 'u', input: { message: 'And now?' } },
  });
  await stream.ended;
  expect(stream.events.at(-1)!.data.status).toBe('completed');

  const calls = await boundLink(twin, 'calls');
  for (let i = 0; i < 5; i++)
    expect((await postJson(`${twin.webhookUrl}/api/v1/webhooks/${calls.token}/events`, callEvent())).status).toBe(201);
  const dialogs = await boundLink(twin, 'dialogs');
  for (let i = 0; i < 5; i++)
    expect((await postJson(`${twin.webhookUrl}/api/v1/webhooks/${dialogs.token}/events`, textEvent(2))).status).toBe(201);
  const task = await twin.admin('tasks', 'create', '--link', dialogs.linkId);
  expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ handed_off: 5, failed: 0 });

  await twin.settled();
  report = (await twin.admin('cost', 'report')) as CostReport;
}, 180_000);
afterAll(() => twin?.close());

describe('cost report for mixed traffic, line by line against AWS list prices', () => {
  const sheet = loadPriceSheet();
  /** Each line's published price per unit, by the line its meter's units land on. */
  const publishedByLine = new Map<string, number>();
  for (const name of COST_UNIT_NAMES)
    sheet.units[name].lines.forEach((line, index) => {
      const published = PUBLISHED[name][index]!;
      publishedByLine.set(line.line, published.usd / published.perMetered);
    });
  const MODEL_LINES = new Set([sheet.units.inputTokens.lines[0]!.line, sheet.units.images.lines[0]!.line]);

  it('has traffic on every line that bills per request, byte or unit', () => {
    const billed = report.services.filter((line) => line.units > 0 && line.usd > 0).map((line) => line.service);
    for (const name of [
      'apiRequests',
      'lambdaInvocations',
      'lambdaGbMs',
      'dynamoReadUnits',
      'dynamoWriteUnits',
      's3WriteRequests',
      'stateTransitions',
      'storedBytes',
      's3StoredBytes',
      'logBytes',
      'dataTransferOutBytes',
      'eventBridgeEvents',
    ] as const)
      for (const line of sheet.units[name].lines) expect(billed, line.line).toContain(line.line);
  });

  it('costs each line its units at the published price per unit, to the report’s rounding', () => {
    for (const line of report.services.filter((entry) => !MODEL_LINES.has(entry.service))) {
      const price = publishedByLine.get(line.service);
      expect(price, line.service).toBeDefined();
      expect(Math.abs(line.usd - line.units * price!), `${line.service}: ${line.usd} for ${line.units}`).toBeLessThanOrEqual(1e-8);
      // Each line says where finance finds it on the bill.
      if (line.usd > 0) expect([line.aws_service, line.usage_type].every(Boolean), line.service).toBe(true);
    }
  });

  it('costs the model its tokens at its published price, in the Bedrock tokens line', () => {
    const published = PUBLISHED_MODELS[LITE] as { input: number; output: number };
    const expected = (2 * USAGE.inputTokens * published.input + 2 * USAGE.outputTokens * published.output) / 1e6;
    const model = report.models.find((entry) => entry.model === LITE)!;
    expect(model).toMatchObject({ input_tokens: 2 * USAGE.inputTokens, output_tokens: 2 * USAGE.outputTokens, priced: true });
    expect(Math.abs(model.usd! - expected)).toBeLessThanOrEqual(1e-8);
    const tokens = report.services.find((entry) => entry.service === sheet.units.inputTokens.lines[0]!.line)!;
    expect(Math.abs(tokens.usd - expected)).toBeLessThanOrEqual(1e-8);
  });

  it('adds the lines up to the total', () => {
    expect(Math.abs(report.services.reduce((sum, line) => sum + line.usd, 0) - report.total_usd)).toBeLessThanOrEqual(1e-7);
  });
});

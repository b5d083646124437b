import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import type { CostReport } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { createKey, publishedClient } from '../support/published.ts';

/**
 * One execution on the twin that uses two Bedrock models (Nova Lite, then Nova Pro, through the Bedrock stand-in, which
 * answers with the token usage scripted here, cache tokens included), then waits (a second step), then draws two images
 * with the scripted (offline) provider, one in premium quality (the catalog serves no Bedrock image model), and writes
 * a scripted reply. The report must price each model with its own price: within 2 % of the hand calculation below,
 * which reads the price sheet's `models` entries; the scripted model, images included, is a $0 line of its own.
 */
const PROJECT = 'per-model';
const LITE = 'amazon.nova-lite-v1:0';
const PRO = 'amazon.nova-pro-v1:0';
const LITE_USAGE = { inputTokens: 1200, outputTokens: 300, cacheReadInputTokens: 2000 };
const PRO_USAGE = { inputTokens: 5000, outputTokens: 1500, cacheWriteInputTokens: 800 };
const sheet = loadPriceSheet();
const perMillion = (count: number, usd: number | undefined) => (count * usd!) / 1_000_000;
const lite = sheet.models[LITE]!;
const pro = sheet.models[PRO]!;
/** By hand: each model's tokens at its own per-million prices; the scripted model's tokens and images at $0. */
const EXPECTED = {
  [LITE]:
    perMillion(1200, lite.input_usd_per_million) +
    perMillion(300, lite.output_usd_per_million) +
    perMillion(2000, lite.cache_read_usd_per_million),
  [PRO]:
    perMillion(5000, pro.input_usd_per_million) +
    perMillion(1500, pro.output_usd_per_million) +
    perMillion(800, pro.cache_write_usd_per_million),
  scripted: 0,
};

const WORKFLOW = {
  id: 'two-models',
  name: 'Two models',
  start: 'fast',
  nodes: {
    fast: { type: 'llm', provider: 'bedrock', model_id: LITE, prompt: '{{input.message}}', next: 'deep' },
    deep: { type: 'llm', provider: 'bedrock', model_id: PRO, prompt: 'Think again: {{nodes.fast.output}}', next: 'pause' },
    // Two step invocations: the per-model counters ride in the state machine's cursor from one to the next.
    pause: { type: 'wait', seconds: 1, next: 'poster' },
    poster: { type: 'image', provider: 'scripted', prompt: 'A poster', width: 512, height: 512, quality: 'premium', next: 'sketch' },
    sketch: { type: 'image', provider: 'scripted', prompt: 'A sketch', width: 32, height: 32, next: 'note' },
    note: { type: 'llm', provider: 'scripted', reply: 'Noted in four words', next: 'done' },
    done: { type: 'end', output: { deep: '{{nodes.deep.output}}', note: '{{nodes.note.output}}' } },
  },
};

let twin: TestTwin;
let report: CostReport;
let executionId: string;
let publicUsage: unknown;

beforeAll(async () => {
  twin = await startTestTwin();
  const dir = mkdtempSync(join(tmpdir(), 'per-model-'));
  writeFileSync(join(dir, 'two-models.json'), JSON.stringify(WORKFLOW));
  await twin.admin('publish', dir, '--project', PROJECT);
  const client = publishedClient(twin, (await createKey(twin, 'full', { project: PROJECT })).key);
  twin.bedrock.reset();
  twin.bedrock.scriptConverse(LITE, [{ text: ['Quick ', 'answer.'], usage: LITE_USAGE }]);
  twin.bedrock.scriptConverse(PRO, [{ text: ['Deep ', 'answer.'], usage: PRO_USAGE }]);
  const run = await client.execute('two-models', { user_id: 'u', input: { message: 'Which plan?' } });
  expect(run.status, run.text).toBe(200);
  expect(run.body).toMatchObject({ status: 'completed', output: { deep: 'Deep answer.', note: 'Noted in four words' } });
  executionId = run.body.execution_id as string;
  publicUsage = run.body.usage;
  await twin.settled(['WorkflowStep', 'PublishedExecute']);
  const result = await runCli(['cost', 'report', '--project', PROJECT, '--json']);
  expect(result.exitCode, result.stderr).toBe(0);
  report = JSON.parse(result.stdout) as CostReport;
}, 120_000);
afterAll(() => twin?.close());

describe('the cost report prices each model with its own price', () => {
  it('lists the models of the execution, each within 2 % of the hand calculation from the price sheet', () => {
    expect(twin.bedrock.requests.map((request) => [request.operation, request.modelId])).toEqual([
      ['ConverseStream', LITE],
      ['ConverseStream', PRO],
    ]);
    const byModel = Object.fromEntries(report.models.map((model) => [model.model, model]));
    expect(Object.keys(byModel).sort()).toEqual([LITE, PRO, 'scripted'].sort());
    for (const [model, usd] of Object.entries(EXPECTED)) {
      expect(byModel[model]!.priced, model).toBe(true);
      expect(Math.abs(byModel[model]!.usd! - usd), `${model}: report ${byModel[model]!.usd}, by hand ${usd}`).toBeLessThanOrEqual(
        usd * 0.02,
      );
    }
    expect(byModel[LITE]).toMatchObject({
      input_tokens: 1200,
      output_tokens: 300,
      cache_read_tokens: 2000,
      cache_write_tokens: 0,
      images: 0,
      source: lite.source,
    });
    expect(byModel[PRO]).toMatchObject({
      input_tokens: 5000,
      output_tokens: 1500,
      cache_read_tokens: 0,
      cache_write_tokens: 800,
      images: 0,
    });
    // The offline model: its word tokens and both its images (the premium one too), at $0, a line of its own.
    expect(byModel.scripted).toMatchObject({ output_tokens: 4, images: 2, usd: 0 });
    expect(report.models.map((model) => model.model)).toEqual([PRO, LITE, 'scripted']);
  });

  it('puts the model dollars in the Bedrock services, the total, the day, the project and the execution', () => {
    const services = Object.fromEntries(report.services.map((service) => [service.service, service]));
    const tokens = EXPECTED[LITE] + EXPECTED[PRO];
    expect(Math.abs(services['Bedrock tokens']!.usd - tokens)).toBeLessThanOrEqual(tokens * 0.02);
    // Both images are the scripted model's: counted, at $0.
    expect(services['Bedrock images']!.usd).toBe(0);
    // The aggregate counters are still there, as counts: the tokens (the Bedrock and scripted ones, the cache reads and
    // writes included), 2 images, and the 3 calls as a service of their own.
    expect(services['Bedrock tokens']!.units).toBe(1200 + 5000 + 300 + 1500 + 4 + 2000 + 800);
    expect(services['Bedrock images']!.units).toBe(2);
    expect(services['Bedrock calls']).toMatchObject({ service: 'Bedrock calls', units: 3, usd: 0 });
    expect(report.unpriced_models).toEqual([]);
    expect(report.services.reduce((sum, service) => sum + service.usd, 0)).toBeCloseTo(report.total_usd, 7);
    const models = tokens;
    // The rest of the execution (requests, Lambda, DynamoDB, S3, transitions) is a small part of a cent.
    expect(report.total_usd).toBeGreaterThan(models);
    expect(report.total_usd).toBeLessThan(models + 0.001);
    expect(report.days.reduce((sum, day) => sum + day.total_usd, 0)).toBeCloseTo(report.total_usd, 7);
    expect(report.subjects).toEqual([{ subject: `project#${PROJECT}`, usd: report.total_usd }]);
    expect(report.per_run.runs).toBe(1);
    expect(report.per_run.mean_usd!).toBeGreaterThan(models);
    expect(report.per_run.mean_usd!).toBeLessThan(models + 0.001);
    expect(report.workflows).toMatchObject([{ project: PROJECT, workflow_id: 'two-models', runs: 1, mean_usd: report.per_run.mean_usd }]);
  });

  it('keeps the logical model ids in the usage items and the execution record, and the public usage as it was', async () => {
    const items = (await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.usage }))).Items ?? [];
    const names = new Set(items.flatMap((item) => Object.keys(item)));
    for (const name of [
      `model#${LITE}#input_tokens`,
      `model#${LITE}#cache_read_tokens`,
      `model#${PRO}#cache_write_tokens`,
      'model#scripted#images_premium_1024',
      'model#scripted#output_tokens',
      'model#scripted#images_standard_1024',
    ]) {
      expect(names, name).toContain(name);
    }
    expect([...names].filter((name) => name.startsWith('model#') && name.includes('arn:'))).toEqual([]);
    const { Item } = await twin.dynamo.send(
      new GetCommand({ TableName: twin.twin.tables.executions, Key: { pk: `execution#${executionId}` } }),
    );
    expect(Item!.cost_units.models).toEqual({
      [LITE]: { input_tokens: 1200, output_tokens: 300, cache_read_tokens: 2000 },
      [PRO]: { input_tokens: 5000, output_tokens: 1500, cache_write_tokens: 800 },
      scripted: { output_tokens: 4, images_premium_1024: 1, images_standard_1024: 1 },
    });
    expect(publicUsage).toEqual({ model_calls: 3, input_tokens: 6200, output_tokens: 1804, tool_calls: 0, images: 2 });
  });

  it('gives each model a CSV row', async () => {
    const result = await runCli(['cost', 'report', '--project', PROJECT, '--csv']);
    const rows = result.stdout
      .trimEnd()
      .split('\r\n')
      .map((row) => row.split(','));
    const modelRows = Object.fromEntries(rows.filter((row) => row[0]!.startsWith('model ')).map((row) => [row[0], row]));
    // Tokens of each kind and images in columns of their own, never one sum.
    expect(modelRows[`model ${PRO}`]).toEqual([
      `model ${PRO}`,
      '',
      report.models[0]!.usd!.toFixed(8),
      '5000',
      '1500',
      '0',
      '800',
      '0',
      '',
      '',
    ]);
    expect(modelRows[`model ${LITE}`]).toEqual([
      `model ${LITE}`,
      '',
      report.models[1]!.usd!.toFixed(8),
      '1200',
      '300',
      '2000',
      '0',
      '0',
      '',
      '',
    ]);
    expect(modelRows['model scripted']).toEqual(['model scripted', '', '0.00000000', '0', '4', '0', '0', '2', '', '']);
    expect(rows.some((row) => row[0] === 'unpriced models')).toBe(false);
  });
});

import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { addModelUsage, emptyCostUnits, imageCounter, subtractModelUsage, type ModelUsage } from '#shared/metering/cost-meter.ts';
import { createUsageMeter, MAX_USAGE_ATTRIBUTE_BYTES, modelAttribute, modelUsageOf } from '#shared/metering/usage-meter.ts';
import { costReport, costReportCsv, costReportTable } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet, modelCostOf, type PriceSheet } from '#lib/pricing/price-sheet.ts';
import { OVERRIDABLE_PARAMS, workflowShape } from '#workflows/definition-schema.ts';

/**
 * Tokens and images are priced per model, with the model's own price from the sheet: never every token as one model.
 * The figures below are worked out by hand from lib/pricing/us-east-1.json's `models` entries.
 */
const sheet = loadPriceSheet();
const LITE = 'amazon.nova-lite-v1:0';
const PRO = 'amazon.nova-pro-v1:0';
const HAIKU_45 = 'anthropic.claude-haiku-4-5-20251001-v1:0';
const CANVAS = 'amazon.nova-canvas-v1:0';
const perMillion = (count: number, usd: number) => (count * usd) / 1_000_000;
const usd = (modelId: string, counters: Parameters<typeof modelCostOf>[2]) => {
  const cost = modelCostOf(sheet, modelId, counters);
  return cost.priced ? cost.tokens_usd + cost.images_usd : null;
};

describe('the price sheet prices each model with its own price', () => {
  it('prices two models apart: the same tokens on Nova Pro cost what Nova Pro costs, not what Nova Lite does', () => {
    const tokens = { input_tokens: 1_000_000, output_tokens: 1_000_000 };
    expect(usd(LITE, tokens)).toBeCloseTo(0.06 + 0.24, 10);
    expect(usd(PRO, tokens)).toBeCloseTo(0.8 + 3.2, 10);
    expect(usd(PRO, { input_tokens: 1234, output_tokens: 56 })).toBeCloseTo(perMillion(1234, 0.8) + perMillion(56, 3.2), 12);
  });

  it('prices a profile as its foundation model, unless the profile has its own entry', () => {
    expect(usd(`us.${LITE}`, { input_tokens: 1000 })).toBe(usd(LITE, { input_tokens: 1000 }));
    expect(usd(`eu.${PRO}`, { output_tokens: 10 })).toBe(usd(PRO, { output_tokens: 10 }));
    // Claude Haiku 4.5: a geographic profile costs 10 % more than global cross-region inference, which has its own entry.
    expect(usd(`us.${HAIKU_45}`, { input_tokens: 1_000_000 })).toBeCloseTo(1.1, 10);
    expect(usd(`global.${HAIKU_45}`, { input_tokens: 1_000_000 })).toBeCloseTo(1.0, 10);
  });

  it("prices prompt-cache reads and writes at the model's cache prices", () => {
    const cached = { input_tokens: 100, output_tokens: 20, cache_read_tokens: 5000, cache_write_tokens: 3000 };
    expect(usd(`us.${HAIKU_45}`, cached)).toBeCloseTo(
      perMillion(100, 1.1) + perMillion(20, 5.5) + perMillion(5000, 0.11) + perMillion(3000, 1.375),
      12,
    );
    // Nova: cache reads 75 % below its input price, cache writes not charged.
    expect(usd(PRO, { cache_read_tokens: 1_000_000, cache_write_tokens: 1_000_000 })).toBeCloseTo(0.2, 10);
    expect(usd(LITE, { cache_read_tokens: 1_000_000 })).toBeCloseTo(0.015, 10);
  });

  it('prices Nova Canvas images by quality and size class, the class by pixel count', () => {
    expect(imageCounter(320, 320)).toBe('images_standard_1024');
    expect(imageCounter(1024, 1024)).toBe('images_standard_1024');
    expect(imageCounter(1024, 1040)).toBe('images_standard_2048');
    expect(imageCounter(2048, 2048, 'premium')).toBe('images_premium_2048');
    expect(imageCounter(512, 2048, 'premium')).toBe('images_premium_1024');
    expect(usd(CANVAS, { images_standard_1024: 1 })).toBeCloseTo(0.04, 10);
    expect(usd(CANVAS, { images_standard_2048: 1 })).toBeCloseTo(0.06, 10);
    expect(usd(CANVAS, { images_premium_1024: 1 })).toBeCloseTo(0.06, 10);
    expect(usd(CANVAS, { images_premium_2048: 2 })).toBeCloseTo(0.16, 10);
    expect(modelCostOf(sheet, CANVAS, { images_standard_1024: 3 })).toMatchObject({
      priced: true,
      tokens_usd: 0,
      images_usd: expect.closeTo(0.12, 10),
    });
  });

  it("lets an image node ask for Nova Canvas's premium quality (standard unless it says so), and an execution override it", () => {
    const withQuality = (quality?: unknown) =>
      workflowShape.safeParse({
        id: 'w',
        name: 'W',
        start: 'draw',
        nodes: {
          draw: {
            type: 'image',
            provider: 'bedrock',
            prompt: 'p',
            width: 320,
            height: 320,
            ...(quality === undefined ? {} : { quality }),
            next: 'done',
          },
          done: { type: 'end', output: 'x' },
        },
      });
    expect(withQuality().success).toBe(true);
    expect(withQuality('premium').success).toBe(true);
    expect(withQuality('standard').success).toBe(true);
    expect(withQuality('ultra').success).toBe(false);
    expect(OVERRIDABLE_PARAMS.image).toContain('quality');
  });

  it('reports an unknown model, or a counter its entry has no price for, as unpriced: never as another model', () => {
    expect(modelCostOf(sheet, 'amazon.titan-text-express-v1', { input_tokens: 1000 })).toEqual({
      priced: false,
      tokens_usd: 0,
      images_usd: 0,
      source: null,
    });
    expect(modelCostOf(sheet, `us.amazon.titan-text-express-v1`, { input_tokens: 1000 }).priced).toBe(false);
    // A text model has no image price; an image model no token price.
    expect(modelCostOf(sheet, LITE, { images_standard_1024: 1 })).toMatchObject({ priced: false, source: sheet.models[LITE]!.source });
    expect(modelCostOf(sheet, CANVAS, { input_tokens: 1 }).priced).toBe(false);
    // An entry without cache prices cannot price cache tokens.
    const noCache: PriceSheet = {
      ...sheet,
      models: { x: { input_usd_per_million: 1, output_usd_per_million: 2, source: 's', date: 'd' } },
    };
    expect(modelCostOf(noCache, 'x', { input_tokens: 1 }).priced).toBe(true);
    expect(modelCostOf(noCache, 'x', { cache_write_tokens: 1 }).priced).toBe(false);
  });

  it('prices the scripted (offline) model at $0, as a model of its own', () => {
    expect(modelCostOf(sheet, 'scripted', { output_tokens: 10_000, images_standard_1024: 3, images_premium_2048: 1 })).toMatchObject({
      priced: true,
      tokens_usd: 0,
      images_usd: 0,
    });
  });

  it('no longer prices the aggregate counters as one model: they are counts', () => {
    for (const unit of ['inputTokens', 'outputTokens', 'images'] as const) {
      expect(sheet.units[unit].usd_per_unit).toBe(0);
      expect(sheet.units[unit].lines[0]!.basis).toMatch(/^priced per model \(see models\)/);
    }
    // Model calls are a service of their own: a call is no token, and Bedrock bills it through its tokens and images.
    expect(sheet.units.modelCalls.lines).toEqual([
      expect.objectContaining({ line: 'Bedrock calls', usd: 0, usd_per_unit: 0, basis: 'billed through tokens and images' }),
    ]);
    expect(sheet.units.inputTokens.lines[0]!.line).toBe('Bedrock tokens');
  });
});

describe('per-model counters', () => {
  it('add and subtract counter by counter, leaving out what comes to zero', () => {
    const before: ModelUsage = { [LITE]: { input_tokens: 10, output_tokens: 2 } };
    const after = addModelUsage(before, { [LITE]: { input_tokens: 5 }, [PRO]: { output_tokens: 7 } });
    expect({ ...after }).toEqual({ [LITE]: { input_tokens: 15, output_tokens: 2 }, [PRO]: { output_tokens: 7 } });
    expect({ ...subtractModelUsage(after, before) }).toEqual({ [LITE]: { input_tokens: 5 }, [PRO]: { output_tokens: 7 } });
    expect({ ...subtractModelUsage(before, before) }).toEqual({});
    // A model id is data: `__proto__` is a key like any other.
    expect(Object.keys(addModelUsage(undefined, JSON.parse('{"__proto__": {"input_tokens": 1}}') as ModelUsage))).toEqual(['__proto__']);
  });

  it('are usage item attributes named model#<model id>#<counter>, at most 255 bytes, read back by modelUsageOf', () => {
    expect(modelAttribute(LITE, 'input_tokens')).toBe('model#amazon.nova-lite-v1:0#input_tokens');
    expect(modelAttribute(`us.${HAIKU_45}`, 'cache_write_tokens')).toBe(`model#us.${HAIKU_45}#cache_write_tokens`);
    expect(modelAttribute(CANVAS, 'images_premium_2048')).toBe('model#amazon.nova-canvas-v1:0#images_premium_2048');
    const item = {
      pk: 'project#p',
      sk: '2026-11-26#3',
      input_tokens: 9,
      [modelAttribute(LITE, 'input_tokens')]: 120,
      [modelAttribute(LITE, 'cache_read_tokens')]: 40,
      [modelAttribute(CANVAS, 'images_standard_1024')]: 2,
      'model#broken': 1,
      [`model#${LITE}#not_a_counter`]: 5,
    };
    expect({ ...modelUsageOf(item) }).toEqual({
      [LITE]: { input_tokens: 120, cache_read_tokens: 40 },
      [CANVAS]: { images_standard_1024: 2 },
    });
  });

  it('keep a model id whose names would pass 255 bytes as its start and a hash: unpriced, never another model', () => {
    const long = `${LITE}${'é'.repeat(200)}`;
    const name = modelAttribute(long, 'images_premium_2048');
    expect(Buffer.byteLength(name, 'utf8')).toBeLessThanOrEqual(MAX_USAGE_ATTRIBUTE_BYTES);
    expect(name).toMatch(/^model#amazon\.nova-lite-v1:0é+~[0-9a-f]{8}#images_premium_2048$/);
    expect(modelAttribute(`${long}x`, 'input_tokens')).not.toBe(modelAttribute(long, 'input_tokens'));
    const [id] = Object.keys(modelUsageOf({ [modelAttribute(long, 'input_tokens')]: 3 }));
    expect(modelCostOf(sheet, id!, { input_tokens: 3 }).priced).toBe(false);
    const longest = 'm'.repeat(228);
    expect(Buffer.byteLength(modelAttribute(longest, 'images_standard_2048'))).toBe(255);
    expect(modelAttribute(longest, 'images_standard_2048')).toContain(longest);
  });

  it('are added by the one usage UpdateItem of an invocation, beside the aggregate counters', async () => {
    const sent: UpdateCommand[] = [];
    const client = { send: (command: UpdateCommand) => void sent.push(command) } as unknown as DynamoDBDocumentClient;
    await createUsageMeter(client, 'usage').add(
      'project#p',
      { ...emptyCostUnits(), inputTokens: 30, modelCalls: 2 },
      Date.parse('2026-11-26T10:00:00Z'),
      {
        [LITE]: { input_tokens: 10, output_tokens: 3 },
        scripted: { output_tokens: 4 },
      },
    );
    expect(sent).toHaveLength(1);
    const input = sent[0]!.input;
    const added = Object.fromEntries(
      Object.entries(input.ExpressionAttributeNames!).map(([placeholder, name]) => [
        name,
        input.ExpressionAttributeValues![placeholder.replace('#', ':')],
      ]),
    );
    expect(added).toEqual({
      dynamo_write_units: 1,
      input_tokens: 30,
      model_calls: 2,
      [`model#${LITE}#input_tokens`]: 10,
      [`model#${LITE}#output_tokens`]: 3,
      'model#scripted#output_tokens': 4,
    });
    expect(input.UpdateExpression).toMatch(/^SET expires_at = :expires ADD (#u\d+ :u\d+, )+#u\d+ :u\d+$/);
  });
});

describe('the cost report, per model', () => {
  const LITE_TOKENS = { input_tokens: 2000, output_tokens: 500 };
  const PRO_TOKENS = { input_tokens: 1000, output_tokens: 300, cache_read_tokens: 4000 };
  const liteUsd = perMillion(2000, 0.06) + perMillion(500, 0.24);
  const proUsd = perMillion(1000, 0.8) + perMillion(300, 3.2) + perMillion(4000, 0.2);
  const TRANSITION = sheet.units.stateTransitions.usd_per_unit;
  const report = costReport({
    from: '2026-11-25',
    to: '2026-11-26',
    sheet,
    usage: [
      {
        subject: 'project#a',
        day: '2026-11-25',
        units: { stateTransitions: 4, modelCalls: 2, inputTokens: 3000, outputTokens: 800 },
        models: { [LITE]: LITE_TOKENS, [PRO]: PRO_TOKENS },
      },
      {
        subject: 'project#a',
        day: '2026-11-26',
        units: { images: 3 },
        models: { [CANVAS]: { images_standard_1024: 1, images_premium_2048: 1 }, scripted: { images_standard_1024: 1, output_tokens: 9 } },
      },
      { subject: 'project#b', day: '2026-11-26', units: { inputTokens: 50 }, models: { 'acme.unknown-v1:0': { input_tokens: 50 } } },
    ],
    executionCosts: [
      { project: 'a', workflow_id: 'two-models', units: { stateTransitions: 4 }, models: { [LITE]: LITE_TOKENS, [PRO]: PRO_TOKENS } },
      { project: 'a', workflow_id: 'offline', units: { stateTransitions: 4 }, models: { scripted: { output_tokens: 9 } } },
    ],
  });

  it('lists each model with its counters and dollars, the most expensive first and the unpriced last', () => {
    expect(report.models).toEqual([
      {
        model: CANVAS,
        input_tokens: 0,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        images: 2,
        usd: 0.12,
        priced: true,
        source: sheet.models[CANVAS]!.source,
      },
      {
        model: PRO,
        ...PRO_TOKENS,
        cache_write_tokens: 0,
        images: 0,
        usd: expect.closeTo(proUsd, 8),
        priced: true,
        source: sheet.models[PRO]!.source,
      },
      {
        model: LITE,
        ...LITE_TOKENS,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        images: 0,
        usd: expect.closeTo(liteUsd, 8),
        priced: true,
        source: sheet.models[LITE]!.source,
      },
      {
        model: 'scripted',
        input_tokens: 0,
        output_tokens: 9,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        images: 1,
        usd: 0,
        priced: true,
        source: sheet.models.scripted!.source,
      },
      {
        model: 'acme.unknown-v1:0',
        input_tokens: 50,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        images: 0,
        usd: null,
        priced: false,
        source: null,
      },
    ]);
  });

  it("puts the models' dollars in the Bedrock services, the total, the days, the subjects and the runs", () => {
    const services = Object.fromEntries(report.services.map((service) => [service.service, service]));
    expect(services['Bedrock tokens']!.usd).toBeCloseTo(liteUsd + proUsd, 8);
    expect(services['Bedrock images']!.usd).toBeCloseTo(0.04 + 0.08, 8);
    // The aggregate counters are still counted, at no price of their own: the tokens' units are tokens, all four kinds
    // (the aggregate input and output, and the models' cache reads), the calls apart.
    expect(services['Bedrock tokens']!.units).toBe(3000 + 800 + 50 + 4000);
    expect(services['Bedrock calls']).toEqual({
      service: 'Bedrock calls',
      aws_service: 'Amazon Bedrock',
      usage_type: null,
      units: 2,
      usd: 0,
    });
    expect(services['Bedrock images']!.units).toBe(3);
    expect(report.total_usd).toBeCloseTo(4 * TRANSITION + liteUsd + proUsd + 0.12, 8);
    expect(report.services.reduce((sum, service) => sum + service.usd, 0)).toBeCloseTo(report.total_usd, 8);
    expect(report.days.map((day) => day.total_usd)).toEqual([
      expect.closeTo(4 * TRANSITION + liteUsd + proUsd, 8),
      expect.closeTo(0.12, 8),
    ]);
    expect(report.days[1]!.usd_by_service['Bedrock images']).toBeCloseTo(0.12, 8);
    expect(report.days.reduce((sum, day) => sum + day.total_usd, 0)).toBeCloseTo(report.total_usd, 8);
    // The unknown model's tokens are in no total: project b costs nothing that could be priced.
    expect(report.subjects).toEqual([
      { subject: 'project#a', usd: report.total_usd },
      { subject: 'project#b', usd: 0 },
    ]);
    expect(report.workflows.map((workflow) => [workflow.workflow_id, workflow.mean_usd])).toEqual([
      ['two-models', expect.closeTo(4 * TRANSITION + liteUsd + proUsd, 8)],
      ['offline', expect.closeTo(4 * TRANSITION, 10)],
    ]);
    expect(report.per_run.mean_usd).toBeCloseTo((8 * TRANSITION + liteUsd + proUsd) / 2, 8);
  });

  it('gives each model a row of the CSV and of the table, saying "unpriced" where it cannot be priced', () => {
    const rows = costReportCsv(report)
      .trimEnd()
      .split('\r\n')
      .map((row) => row.split(','));
    // The three first columns as they were; a model's tokens of each kind and images in columns of their own, at the end.
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
    const modelRows = rows.filter((row) => row[0]!.startsWith('model '));
    // No sum of tokens and images in the units column: they are priced apart and are no one count.
    expect(modelRows).toEqual([
      [`model ${CANVAS}`, '', '0.12000000', '0', '0', '0', '0', '2', '', ''],
      [`model ${PRO}`, '', report.models[1]!.usd!.toFixed(8), '1000', '300', '4000', '0', '0', '', ''],
      [`model ${LITE}`, '', report.models[2]!.usd!.toFixed(8), '2000', '500', '0', '0', '0', '', ''],
      ['model scripted', '', '0.00000000', '0', '9', '0', '0', '1', '', ''],
      ['model acme.unknown-v1:0', '', 'unpriced', '50', '0', '0', '0', '0', '', ''],
    ]);
    // Every other row leaves the model columns empty.
    expect(
      rows
        .slice(1)
        .filter((row) => !row[0]!.startsWith('model '))
        .every((row) => row.slice(3, 8).every((field) => field === '')),
    ).toBe(true);
    expect(rows.findIndex((row) => row[0] === 'total')).toBeGreaterThan(rows.findIndex((row) => row[0] === 'model acme.unknown-v1:0'));
    const table = costReportTable(report);
    expect(table).toMatch(/^model acme\.unknown-v1:0 \(50 input tokens\) +unpriced$/m);
    expect(table).toMatch(
      new RegExp(
        `^model ${PRO.replaceAll('.', '\\.')} \\(1000 input \\+ 300 output \\+ 4000 cache read tokens\\) +${report.models[1]!.usd!.toFixed(8)}$`,
        'm',
      ),
    );
    expect(table).toMatch(/^model scripted \(9 output tokens, 1 image\) +0\.00000000$/m);
    expect(table).toMatch(new RegExp(`^model ${CANVAS.replaceAll('.', '\\.')} \\(2 images\\) +0\\.12000000$`, 'm'));
  });

  it("names the unpriced models the total leaves out: in the report, under the table's total and in a CSV row", () => {
    expect(report.unpriced_models).toEqual(['acme.unknown-v1:0']);
    const twoUnpriced = costReport({
      from: '2026-11-26',
      to: '2026-11-26',
      sheet,
      usage: [
        {
          subject: 'project#a',
          day: '2026-11-26',
          units: { inputTokens: 3 },
          models: { 'zeta.x-v1:0': { input_tokens: 1 }, [LITE]: { input_tokens: 1 }, 'acme.y-v1:0': { input_tokens: 1 } },
        },
      ],
      executionCosts: [],
    });
    expect(twoUnpriced.unpriced_models).toEqual(['acme.y-v1:0', 'zeta.x-v1:0']);

    const lines = costReportTable(twoUnpriced).split('\n');
    const total = lines.findIndex((line) => /^total +\d/.test(line));
    expect(lines[total + 1]).toBe('total leaves out unpriced models: acme.y-v1:0, zeta.x-v1:0');

    const rows = costReportCsv(twoUnpriced)
      .trimEnd()
      .split('\r\n')
      .map((row) => row.split(','));
    const csvTotal = rows.findIndex((row) => row[0] === 'total');
    expect(rows[csvTotal + 1]).toEqual(['unpriced models', '', 'acme.y-v1:0 zeta.x-v1:0', '', '', '', '', '', '', '']);
  });

  it('says nothing of unpriced models when every model is priced', () => {
    const priced = costReport({
      from: '2026-11-26',
      to: '2026-11-26',
      sheet,
      usage: [{ subject: 'project#a', day: '2026-11-26', units: { inputTokens: 5 }, models: { [LITE]: { input_tokens: 5 } } }],
      executionCosts: [],
    });
    expect(priced.unpriced_models).toEqual([]);
    expect(costReportTable(priced)).not.toContain('unpriced');
    expect(costReportCsv(priced)).not.toContain('unpriced');
  });

  it('has no model lines, and unchanged totals, where no model was used', () => {
    const plain = costReport({
      from: '2026-11-26',
      to: '2026-11-26',
      sheet,
      usage: [{ subject: 'project#a', day: '2026-11-26', units: { stateTransitions: 4 } }],
      executionCosts: [],
    });
    expect(plain.models).toEqual([]);
    expect(plain.unpriced_models).toEqual([]);
    expect(plain.total_usd).toBeCloseTo(4 * TRANSITION, 10);
  });
});

import { describe, expect, it } from 'vitest';
import { COST_UNIT_NAMES } from '#shared/metering/cost-meter.ts';
import { loadPriceSheet, modelPriceOf } from '#lib/pricing/price-sheet.ts';
import { PUBLISHED, PUBLISHED_MODELS, PUBLISHED_MONTHLY, PUBLISHED_XRAY_PER_MILLION_TRACES } from '../support/published-prices.ts';

const sheet = loadPriceSheet('us-east-1');

describe("the us-east-1 price sheet against AWS's published list prices", () => {
  it('prices every metered unit, line by line, at the published figure per metered unit', () => {
    for (const name of COST_UNIT_NAMES) {
      const lines = sheet.units[name].lines;
      expect(lines.length, name).toBe(PUBLISHED[name].length);
      PUBLISHED[name].forEach((published, index) => {
        const expected = published.usd / published.perMetered;
        const line = lines[index]!;
        expect(line.usd_per_unit, `${name} ${published.quoted} (${published.page})`).toBeCloseTo(expected, 20);
        expect(Math.abs(line.usd_per_unit - expected) <= expected * 1e-9, `${name}: ${line.usd_per_unit} vs ${expected}`).toBe(true);
      });
      const total = PUBLISHED[name].reduce((sum, published) => sum + published.usd / published.perMetered, 0);
      expect(Math.abs(sheet.units[name].usd_per_unit - total) <= total * 1e-9, name).toBe(true);
    }
  });

  it('prices Lambda compute at $0.0000000133334 per GB-millisecond, not a thousandth of it', () => {
    expect(sheet.units.lambdaGbMs.usd_per_unit * 1000 * 60 * 14 * 0.25).toBeCloseTo(0.0028, 4);
  });

  it('prices each catalog model at its published per-million and per-image figures', () => {
    for (const [model, published] of Object.entries(PUBLISHED_MODELS)) {
      const price = modelPriceOf(sheet, model)!;
      expect(price, model).toBeDefined();
      if ('images' in published) expect(price.usd_per_image, model).toEqual(published.images);
      else expect([price.input_usd_per_million, price.output_usd_per_million], model).toEqual([published.input, published.output]);
    }
  });

  it('prices the fixed monthly items at their published figures', () => {
    expect(sheet.fixed_monthly.alarm_metric.usd).toBe(PUBLISHED_MONTHLY.alarm_metric);
    expect(sheet.fixed_monthly.dashboard.usd).toBe(PUBLISHED_MONTHLY.dashboard);
    expect(sheet.fixed_monthly.kms_key.usd).toBe(PUBLISHED_MONTHLY.kms_key);
    expect(sheet.fixed_monthly.custom_metric.usd).toBe(PUBLISHED_MONTHLY.custom_metric);
    expect(sheet.fixed_monthly.dead_letter_queue.usd_per_million_requests).toBe(PUBLISHED_MONTHLY.dead_letter_queue_per_million);
  });

  it('prices a recorded X-Ray trace at its published figure', () => {
    expect(sheet.sampled.xray_traces).toMatchObject({ usd: PUBLISHED_XRAY_PER_MILLION_TRACES, per: 'million' });
  });
});

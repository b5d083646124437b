import { describe, expect, it } from 'vitest';
import { BEDROCK_CATALOG } from '#shared/bedrock-catalog.ts';
import { COST_UNIT_NAMES } from '#shared/metering/cost-meter.ts';
import { alarmMetricCount, fixedMonthlyCosts } from '#lib/pricing/fixed-costs.ts';
import { customMetricCount } from '#shared/lambda/custom-metrics.ts';
import { FIXED_MONTHLY_ITEMS, loadPriceSheet, modelPriceOf, NoPriceSheet, pricePerMeteredUnit } from '#lib/pricing/price-sheet.ts';

/** The price sheet finance reads every figure from: complete, explained, and checked against AWS's pages within a year. */
const sheet = loadPriceSheet();
const DAY_MS = 86_400_000;

describe('the us-east-1 price sheet', () => {
  it('was checked against the AWS pricing pages less than a year ago', () => {
    // Today's date on purpose: a sheet nobody has checked for a year fails the build until someone does.
    expect(sheet.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const age = (Date.now() - Date.parse(`${sheet.date}T00:00:00Z`)) / DAY_MS;
    expect(age, `the sheet's date ${sheet.date}: check every price against its source and set the date`).toBeLessThanOrEqual(365);
    expect(sheet.source).toMatch(/aws\.amazon\.com/);
  });

  it('prices every metered unit, with what the price is based on', () => {
    expect(Object.keys(sheet.units).sort()).toEqual([...COST_UNIT_NAMES].sort());
    for (const name of COST_UNIT_NAMES) {
      const unit = sheet.units[name];
      expect(Number.isFinite(unit.usd_per_unit) && unit.usd_per_unit >= 0, name).toBe(true);
      for (const line of unit.lines) {
        expect(line.line.length, name).toBeGreaterThan(2);
        expect(line.basis.length, name).toBeGreaterThan(10);
        // A line that costs anything names where it appears on the bill.
        if (line.usd > 0)
          expect(
            [line.service, line.usage_type].every((text) => typeof text === 'string' && text.length > 2),
            name,
          ).toBe(true);
      }
    }
  });

  it('converts a price from the unit its page quotes to the metered unit, and refuses a unit the meter does not count in', () => {
    expect(pricePerMeteredUnit('lambdaGbMs', { usd: 0.0000133334, per: 'GB-second' })).toBeCloseTo(0.0000000133334, 20);
    expect(pricePerMeteredUnit('logBytes', { usd: 0.5, per: 'GB' })).toBe(0.5 / 2 ** 30);
    expect(pricePerMeteredUnit('apiRequests', { usd: 3.5, per: 'million' })).toBe(0.0000035);
    expect(() => pricePerMeteredUnit('lambdaGbMs', { usd: 0.0000133334, per: 'million' })).toThrow(/lambdaGbMs is metered per gbMs/);
    expect(() => pricePerMeteredUnit('apiRequests', { usd: 3.5, per: 'GB' })).toThrow(/a price per GB cannot price it/);
  });

  it('refuses a region it has no sheet for, naming the ones it has', () => {
    expect(() => loadPriceSheet('eu-central-1')).toThrow(NoPriceSheet);
    expect(() => loadPriceSheet('eu-central-1')).toThrow(/No price sheet for eu-central-1: lib\/pricing has us-east-1;/);
  });

  it('prices every catalog model, its foundation id and each profile the catalog allows', () => {
    for (const model of BEDROCK_CATALOG) {
      for (const id of [model.id, ...Object.keys(model.profiles).map((geography) => `${geography}.${model.id}`)]) {
        const price = modelPriceOf(sheet, id);
        expect(price, id).toBeDefined();
        if (model.kind === 'text')
          expect(
            [price!.input_usd_per_million, price!.output_usd_per_million].every((usd) => typeof usd === 'number' && usd > 0),
            id,
          ).toBe(true);
        else expect(Object.values(price!.usd_per_image ?? {}).length, id).toBeGreaterThan(0);
        expect(price!.source, id).toMatch(/aws\.amazon\.com\/bedrock\/pricing/);
      }
    }
  });

  it('has each fixed monthly item with its basis, the dead-letter queue at $0 with its request price', () => {
    expect(Object.keys(sheet.fixed_monthly).sort()).toEqual([...FIXED_MONTHLY_ITEMS].sort());
    for (const item of FIXED_MONTHLY_ITEMS) expect(sheet.fixed_monthly[item].basis.length, item).toBeGreaterThan(20);
    expect(sheet.fixed_monthly.dead_letter_queue).toMatchObject({ usd: 0, usd_per_million_requests: 0.4 });
    expect(sheet.fixed_monthly.dead_letter_queue.basis).toMatch(/\$0 in normal operation/);
  });
});

describe('the fixed monthly cost', () => {
  it('is the alarms, the dashboard, the key and the custom metrics; the dead-letter queue bills nothing in normal operation', () => {
    const fixed = fixedMonthlyCosts(sheet);
    expect(fixed).toEqual([
      { item: 'CloudWatch alarms', count: alarmMetricCount(), usd: Math.round(alarmMetricCount() * 10) / 100 },
      { item: 'CloudWatch dashboard', count: 1, usd: 3 },
      { item: 'KMS key (alarm topic)', count: 1, usd: 1 },
      { item: 'CloudWatch custom metrics', count: customMetricCount(), usd: Math.round(customMetricCount() * 30) / 100 },
      { item: 'SQS dead-letter queue (nightly schedule)', count: 1, usd: 0 },
    ]);
  });
});

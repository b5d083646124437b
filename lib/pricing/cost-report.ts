import { COST_UNIT_NAMES, type CostUnits } from '#shared/metering/cost-meter.ts';
import { fixedMonthlyCosts } from './fixed-costs.ts';
import { priceOf, type PriceSheet } from './price-sheet.ts';

/** One usage item as stored: its subject (`project#P`, `link#L`) and its counters. */
export interface UsageRow {
  subject: string;
  units: Partial<CostUnits>;
}

export interface CostReport {
  from: string;
  to: string;
  price_sheet: { region: string; date: string; source: string };
  services: { service: string; units: number; usd: number }[];
  total_usd: number;
  subjects: { subject: string; usd: number }[];
  per_million_webhook_events: number | null;
  per_run: { runs: number; mean_usd: number | null; p95_usd: number | null };
  fixed_monthly_usd: { item: string; count: number; usd: number }[];
}

/**
 * Turns metered units into dollars with the price sheet: totals by service and by subject; the cost per million
 * webhook events (what the links' usage cost, over the events they accepted); the cost per run (each finished run's
 * step units, from its execution record: mean and p95); and the fixed monthly costs.
 */
export function costReport(input: { from: string; to: string; sheet: PriceSheet; usage: UsageRow[]; runCosts: Partial<CostUnits>[] }): CostReport {
  const { sheet } = input;
  const totals = sumUnits(input.usage.map((row) => row.units));
  const services = new Map<string, { units: number; usd: number }>();
  for (const name of COST_UNIT_NAMES) {
    const { service, usd_per_unit } = sheet.units[name];
    const entry = services.get(service) ?? { units: 0, usd: 0 };
    entry.units += totals[name];
    entry.usd += totals[name] * usd_per_unit;
    services.set(service, entry);
  }
  const bySubject = new Map<string, Partial<CostUnits>[]>();
  for (const row of input.usage) bySubject.set(row.subject, [...(bySubject.get(row.subject) ?? []), row.units]);
  const links = input.usage.filter((row) => row.subject.startsWith('link#'));
  const linkUnits = sumUnits(links.map((row) => row.units));
  const runPrices = input.runCosts.map((units) => priceOf(sheet, units)).sort((a, b) => a - b);
  return {
    from: input.from,
    to: input.to,
    price_sheet: { region: sheet.region, date: sheet.date, source: sheet.source },
    services: [...services].map(([service, entry]) => ({ service, units: entry.units, usd: money(entry.usd) })),
    total_usd: money(priceOf(sheet, totals)),
    subjects: [...bySubject].map(([subject, rows]) => ({ subject, usd: money(priceOf(sheet, sumUnits(rows))) })).sort((a, b) => b.usd - a.usd),
    per_million_webhook_events: linkUnits.webhookEvents > 0 ? money((priceOf(sheet, linkUnits) / linkUnits.webhookEvents) * 1_000_000) : null,
    per_run: {
      runs: runPrices.length,
      mean_usd: runPrices.length > 0 ? money(runPrices.reduce((sum, price) => sum + price, 0) / runPrices.length) : null,
      p95_usd: runPrices.length > 0 ? money(runPrices[Math.min(runPrices.length - 1, Math.ceil(runPrices.length * 0.95) - 1)]!) : null,
    },
    fixed_monthly_usd: fixedMonthlyCosts(sheet),
  };
}

export function sumUnits(rows: Partial<CostUnits>[]): CostUnits {
  return Object.fromEntries(COST_UNIT_NAMES.map((name) => [name, rows.reduce((sum, row) => sum + (row[name] ?? 0), 0)])) as unknown as CostUnits;
}

/** Dollars to a millionth of a cent: per-request figures are that small. */
const money = (usd: number) => Math.round(usd * 1e8) / 1e8;

/** The CSV a spreadsheet opens: a header row, one row per service, then the totals. */
export function costReportCsv(report: CostReport): string {
  const rows = [['service', 'units', 'usd'], ...report.services.map((service) => [service.service, String(service.units), service.usd.toFixed(8)])];
  rows.push(['total', '', report.total_usd.toFixed(8)]);
  rows.push(['per million webhook events', '', report.per_million_webhook_events === null ? '' : report.per_million_webhook_events.toFixed(6)]);
  rows.push(['per run (mean)', String(report.per_run.runs), report.per_run.mean_usd === null ? '' : report.per_run.mean_usd.toFixed(8)]);
  rows.push(['per run (p95)', String(report.per_run.runs), report.per_run.p95_usd === null ? '' : report.per_run.p95_usd.toFixed(8)]);
  for (const fixed of report.fixed_monthly_usd) rows.push([`fixed monthly: ${fixed.item}`, String(fixed.count), fixed.usd.toFixed(2)]);
  return `${rows.map((row) => row.map(csvField).join(',')).join('\r\n')}\r\n`;
}

const csvField = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);

import { COST_UNIT_NAMES, type CostUnits } from '#shared/metering/cost-meter.ts';
import { fixedMonthlyCosts } from './fixed-costs.ts';
import { priceOf, type PriceSheet } from './price-sheet.ts';

/** One usage item as stored: its subject (`project#P`, `link#L`), its UTC day and its counters. */
export interface UsageRow {
  subject: string;
  day: string;
  units: Partial<CostUnits>;
}

/** One finished run: whose workflow it was and the units its steps spent. */
export interface RunCost {
  project: string;
  workflow_id: string;
  units: Partial<CostUnits>;
}

/** Per workflow, its runs' cost: what "which workflow is expensive" is answered from. */
export interface WorkflowCost {
  project: string;
  workflow_id: string;
  runs: number;
  mean_usd: number;
  p95_usd: number;
}

export interface CostReport {
  from: string;
  to: string;
  price_sheet: { region: string; date: string; source: string };
  services: { service: string; units: number; usd: number }[];
  total_usd: number;
  /** Every day of the period (days without usage at 0), each day's cost by service: the report's chart. */
  days: { day: string; usd_by_service: Record<string, number>; total_usd: number }[];
  subjects: { subject: string; usd: number }[];
  per_million_webhook_events: number | null;
  per_run: { runs: number; mean_usd: number | null; p95_usd: number | null };
  /** The workflows by mean run cost, most expensive first. */
  workflows: WorkflowCost[];
  fixed_monthly_usd: { item: string; count: number; usd: number }[];
}

/**
 * Turns metered units into dollars with the price sheet: totals by service and by subject; the cost per million
 * webhook events (what the links' usage cost, over the events they accepted); the cost per run (each finished run's
 * step units, from its execution record: mean and p95); and the fixed monthly costs.
 */
export function costReport(input: { from: string; to: string; sheet: PriceSheet; usage: UsageRow[]; runCosts: RunCost[] }): CostReport {
  const { sheet } = input;
  const totals = sumUnits(input.usage.map((row) => row.units));
  const services = byService(sheet, totals);
  const bySubject = new Map<string, Partial<CostUnits>[]>();
  for (const row of input.usage) bySubject.set(row.subject, [...(bySubject.get(row.subject) ?? []), row.units]);
  const links = input.usage.filter((row) => row.subject.startsWith('link#'));
  const linkUnits = sumUnits(links.map((row) => row.units));
  const runPrices = input.runCosts.map((run) => priceOf(sheet, run.units)).sort((a, b) => a - b);
  return {
    from: input.from,
    to: input.to,
    price_sheet: { region: sheet.region, date: sheet.date, source: sheet.source },
    services: [...services].map(([service, entry]) => ({ service, units: entry.units, usd: money(entry.usd) })),
    total_usd: money(priceOf(sheet, totals)),
    days: daysOf(input.from, input.to, sheet, input.usage),
    subjects: [...bySubject].map(([subject, rows]) => ({ subject, usd: money(priceOf(sheet, sumUnits(rows))) })).sort((a, b) => b.usd - a.usd),
    per_million_webhook_events: linkUnits.webhookEvents > 0 ? money((priceOf(sheet, linkUnits) / linkUnits.webhookEvents) * 1_000_000) : null,
    per_run: { runs: runPrices.length, mean_usd: runPrices.length > 0 ? mean(runPrices) : null, p95_usd: runPrices.length > 0 ? p95(runPrices) : null },
    workflows: workflowCosts(sheet, input.runCosts),
    fixed_monthly_usd: fixedMonthlyCosts(sheet),
  };
}

function byService(sheet: PriceSheet, totals: CostUnits): Map<string, { units: number; usd: number }> {
  const services = new Map<string, { units: number; usd: number }>();
  for (const name of COST_UNIT_NAMES) {
    const { service, usd_per_unit } = sheet.units[name];
    const entry = services.get(service) ?? { units: 0, usd: 0 };
    entry.units += totals[name];
    entry.usd += totals[name] * usd_per_unit;
    services.set(service, entry);
  }
  return services;
}

/** Each UTC day from `from` to `to`, both included, priced by service. */
function daysOf(from: string, to: string, sheet: PriceSheet, usage: UsageRow[]): CostReport['days'] {
  const rowsByDay = new Map<string, Partial<CostUnits>[]>();
  for (const row of usage) rowsByDay.set(row.day, [...(rowsByDay.get(row.day) ?? []), row.units]);
  const days: CostReport['days'] = [];
  for (let time = Date.parse(`${from}T00:00:00Z`); time <= Date.parse(`${to}T00:00:00Z`); time += 86_400_000) {
    const day = new Date(time).toISOString().slice(0, 10);
    const totals = sumUnits(rowsByDay.get(day) ?? []);
    const usd_by_service = Object.fromEntries([...byService(sheet, totals)].map(([service, entry]) => [service, money(entry.usd)]));
    days.push({ day, usd_by_service, total_usd: money(priceOf(sheet, totals)) });
  }
  return days;
}

function workflowCosts(sheet: PriceSheet, runs: RunCost[]): WorkflowCost[] {
  const byWorkflow = new Map<string, { project: string; workflow_id: string; prices: number[] }>();
  for (const run of runs) {
    const key = JSON.stringify([run.project, run.workflow_id]);
    const entry = byWorkflow.get(key) ?? { project: run.project, workflow_id: run.workflow_id, prices: [] };
    entry.prices.push(priceOf(sheet, run.units));
    byWorkflow.set(key, entry);
  }
  return [...byWorkflow.values()]
    .map(({ project, workflow_id, prices }) => {
      const sorted = prices.sort((a, b) => a - b);
      return { project, workflow_id, runs: sorted.length, mean_usd: mean(sorted), p95_usd: p95(sorted) };
    })
    .sort((a, b) => b.mean_usd - a.mean_usd);
}

const mean = (prices: number[]) => money(prices.reduce((sum, price) => sum + price, 0) / prices.length);
/** The nearest-rank 95th percentile of ascending prices. */
const p95 = (sorted: number[]) => money(sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)]!);

export function sumUnits(rows: Partial<CostUnits>[]): CostUnits {
  return Object.fromEntries(COST_UNIT_NAMES.map((name) => [name, rows.reduce((sum, row) => sum + (row[name] ?? 0), 0)])) as unknown as CostUnits;
}

/** Dollars to a millionth of a cent: per-request figures are that small. */
const money = (usd: number) => Math.round(usd * 1e8) / 1e8;

/** The report's figures as rows (label, count, dollars): what the CSV and the terminal table both show. */
function reportRows(report: CostReport): [string, string, string][] {
  const dollars = (usd: number | null, digits: number) => (usd === null ? '' : usd.toFixed(digits));
  return [
    ...report.services.map((service): [string, string, string] => [service.service, String(service.units), dollars(service.usd, 8)]),
    ['total', '', dollars(report.total_usd, 8)],
    ['per million webhook events', '', dollars(report.per_million_webhook_events, 6)],
    ['per run (mean)', String(report.per_run.runs), dollars(report.per_run.mean_usd, 8)],
    ['per run (p95)', String(report.per_run.runs), dollars(report.per_run.p95_usd, 8)],
    ...report.fixed_monthly_usd.map((fixed): [string, string, string] => [`fixed monthly: ${fixed.item}`, String(fixed.count), dollars(fixed.usd, 2)]),
  ];
}

/** The CSV a spreadsheet opens: a header row, one row per service, then the totals. */
export function costReportCsv(report: CostReport): string {
  const rows = [['service', 'units', 'usd'], ...reportRows(report)];
  return `${rows.map((row) => row.map(csvField).join(',')).join('\r\n')}\r\n`;
}

const csvField = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);

/** What a person at a terminal reads: the same rows as the CSV, aligned, under a line saying what they cover. */
export function costReportTable(report: CostReport, topSubjects = 10): string {
  const rows: [string, string, string][] = [['', 'units', 'USD'], ...reportRows(report)];
  const subjects = report.subjects.slice(0, topSubjects);
  if (subjects.length > 0) rows.push(['', '', ''], [`most expensive subjects (${subjects.length} of ${report.subjects.length})`, '', ''], ...subjects.map((subject): [string, string, string] => [`  ${subject.subject}`, '', subject.usd.toFixed(8)]));
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  const lines = rows.map(([label, count, usd]) => `${label.padEnd(widths[0]!)}  ${count.padStart(widths[1]!)}  ${usd.padStart(widths[2]!)}`.trimEnd());
  const heading = `Cost ${report.from} to ${report.to} (UTC days), ${report.price_sheet.region} prices of ${report.price_sheet.date}`;
  return `${heading}\n\n${lines.join('\n')}\n`;
}

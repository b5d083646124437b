import { addModelUsage, COST_UNIT_NAMES, type CostUnits, type ModelUsage } from '#shared/metering/cost-meter.ts';
import { USAGE_RETENTION_MS } from '#shared/metering/usage-meter.ts';
import { DAY_MS } from '#shared/time.ts';
import { fixedMonthlyCosts } from './fixed-costs.ts';
import type { OperationsMode } from '#lib/cdk/stack-outputs.ts';
import { modelCostOf, priceOf, type PricedLine, type PriceSheet } from './price-sheet.ts';

/** One usage item as stored: its subject (`project#P`, `link#L`), its UTC day and its counters. */
export interface UsageRow {
  subject: string;
  day: string;
  units: Partial<CostUnits>;
  /** Its per-model counters (usage-meter.ts `modelUsageOf`): what prices its tokens and images. */
  models?: ModelUsage;
}

/** One finished execution: whose workflow it was and the units its steps spent. */
export interface FinishedExecutionCost {
  project: string;
  workflow_id: string;
  units: Partial<CostUnits>;
  /** What the execution's models did (its record's `cost_units.models`). */
  models?: ModelUsage;
}

/** One model's usage in the period and its price; `usd` null (and `priced` false) when the price sheet cannot price it. */
interface ModelCostLine {
  model: string;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  images: number;
  usd: number | null;
  priced: boolean;
  source: string | null;
}

/** Per workflow, its executions' cost: what "which workflow is expensive" is answered from. */
interface WorkflowCost {
  project: string;
  workflow_id: string;
  runs: number;
  mean_usd: number;
  p95_usd: number;
}

export interface CostReport {
  from: string;
  to: string;
  /** The sheet the report was priced with, and its price of a recorded X-Ray trace (xray-traces.ts forecasts them). */
  price_sheet: { region: string; date: string; source: string; xray_usd_per_trace: number };
  /**
   * One entry per bill line (`service`: the report's name for it), with the AWS service and usage type it appears
   * under in Cost Explorer, so the report reconciles with the bill line by line; null where nothing is billed.
   */
  services: ServiceLine[];
  total_usd: number;
  /** Every day of the period (days without usage at 0), each day's cost by service: the report's chart. */
  days: { day: string; usd_by_service: Record<string, number>; total_usd: number }[];
  /** Per subject, most expensive first; `verify`: a temporary project of `admin verify` (VERIFY_PROJECT_PREFIX). */
  subjects: { subject: string; usd: number; verify?: true }[];
  /** What `admin verify`'s own projects cost: in the totals (the bill has it too), in no per-execution figure or average. */
  verify_usd: number;
  per_million_webhook_events: number | null;
  per_run: { runs: number; mean_usd: number | null; p95_usd: number | null };
  /** The workflows by mean execution cost, most expensive first. */
  workflows: WorkflowCost[];
  /**
   * Per model (its logical id: `us.<id>` for a profile, `scripted` offline), most expensive first, the unpriced last:
   * its tokens and images and what they cost. Its dollars are in the services "Bedrock tokens" and "Bedrock images";
   * an unpriced model's are in no total.
   */
  models: ModelCostLine[];
  /** The models whose `usd` is null (in `models` order; empty when every model is priced): spend no total includes. */
  unpriced_models: string[];
  fixed_monthly_usd: { item: string; count: number; usd: number }[];
  /**
   * Data transfer out to the internet (the API's answers; its service line is in `services` too): the bytes, in GB
   * (2^30 bytes), the sheet's price per GB and the dollars, and per subject that sent any (most first), which the
   * estimate's averages show their share of.
   */
  data_transfer_out: DataTransferOut;
}

interface ServiceLine {
  service: string;
  aws_service: string | null;
  usage_type: string | null;
  units: number;
  usd: number;
}

interface DataTransferOut {
  /** Its line in `services`. */
  service: string;
  bytes: number;
  gb: number;
  usd_per_gb: number;
  usd: number;
  subjects: { subject: string; bytes: number; usd: number }[];
}

/**
 * The projects `admin verify` makes for its own traffic are named so (lib/admin/verify-command.ts); its webhook link's
 * usage it deletes when it cleans up.
 */
export const VERIFY_PROJECT_PREFIX = 'admin-verify-';
const isVerifySubject = (subject: string) => subject.startsWith(`project#${VERIFY_PROJECT_PREFIX}`);

/**
 * The longest period a report covers, in days: as long as usage items are kept. A longer one could only add days
 * whose usage is gone (or has not happened), each a day of `days` and a bar of the chart.
 */
export const MAX_REPORT_DAYS = USAGE_RETENTION_MS / DAY_MS;

/** The UTC days from `from` to `to` (YYYY-MM-DD), both included. */
export const periodDays = (from: string, to: string) => (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1;

/**
 * Turns metered units into dollars with the price sheet: totals by service and by subject; the cost per million
 * webhook events (what the links' usage cost, over the events they accepted); the cost per execution (each finished execution's
 * step units, from its execution record: mean and p95); and the fixed monthly costs.
 */
export function costReport(input: {
  from: string;
  to: string;
  sheet: PriceSheet;
  usage: UsageRow[];
  executionCosts: FinishedExecutionCost[];
  /** The deployment's `operations` setting; without it, the full stack's fixed items. */
  operations?: OperationsMode;
}): CostReport {
  const { sheet } = input;
  const days = periodDays(input.from, input.to);
  if (!(days >= 1 && days <= MAX_REPORT_DAYS))
    throw new RangeError(`a report covers 1 to ${MAX_REPORT_DAYS} days; ${input.from} to ${input.to} is ${days}`);
  const all = metered(input.usage);
  const services = byService(sheet, all);
  const bySubject = new Map<string, UsageRow[]>();
  for (const row of input.usage) bySubject.set(row.subject, [...(bySubject.get(row.subject) ?? []), row]);
  const links = metered(input.usage.filter((row) => row.subject.startsWith('link#')));
  // Verify's executions are checks, not the deployment's workload: its per-execution figures leave them out.
  const executionCosts = input.executionCosts.filter((execution) => !execution.project.startsWith(VERIFY_PROJECT_PREFIX));
  const executionPrices = executionCosts.map((execution) => usdOf(sheet, metered([execution]))).sort((a, b) => a - b);
  const subjects = [...bySubject]
    .map(([subject, rows]) => ({
      subject,
      usd: money(usdOf(sheet, metered(rows))),
      ...(isVerifySubject(subject) ? { verify: true as const } : {}),
    }))
    .sort((a, b) => b.usd - a.usd);
  const models = modelLines(sheet, all.models);
  return {
    from: input.from,
    to: input.to,
    price_sheet: {
      region: sheet.region,
      date: sheet.date,
      source: sheet.source,
      xray_usd_per_trace: sheet.sampled.xray_traces.usd / 1_000_000,
    },
    services: [...services].map(([service, entry]) => ({
      service,
      aws_service: entry.aws_service,
      usage_type: entry.usage_type,
      units: entry.units,
      usd: money(entry.usd),
    })),
    total_usd: money(usdOf(sheet, all)),
    days: daysOf(input.from, input.to, sheet, input.usage),
    subjects,
    verify_usd: money(subjects.filter((subject) => subject.verify).reduce((sum, subject) => sum + subject.usd, 0)),
    per_million_webhook_events: links.units.webhookEvents > 0 ? money((usdOf(sheet, links) / links.units.webhookEvents) * 1_000_000) : null,
    per_run: {
      runs: executionPrices.length,
      mean_usd: executionPrices.length > 0 ? mean(executionPrices) : null,
      p95_usd: executionPrices.length > 0 ? p95(executionPrices) : null,
    },
    workflows: workflowCosts(sheet, executionCosts),
    models,
    unpriced_models: models.filter((model) => model.usd === null).map((model) => model.model),
    fixed_monthly_usd: fixedMonthlyCosts(sheet, input.operations),
    data_transfer_out: dataTransferOut(sheet, all.units.dataTransferOutBytes, bySubject),
  };
}

const GB = 2 ** 30;

function dataTransferOut(sheet: PriceSheet, bytes: number, bySubject: Map<string, UsageRow[]>): DataTransferOut {
  const { usd_per_unit: price, lines } = sheet.units.dataTransferOutBytes;
  const subjects = [...bySubject]
    .map(([subject, rows]) => {
      const sent = rows.reduce((sum, row) => sum + (row.units.dataTransferOutBytes ?? 0), 0);
      return { subject, bytes: sent, usd: money(sent * price) };
    })
    .filter((subject) => subject.bytes !== 0)
    .sort((a, b) => b.bytes - a.bytes);
  return {
    service: lines[0]!.line,
    bytes,
    gb: Math.round((bytes / GB) * 1e9) / 1e9,
    usd_per_gb: Math.round(price * GB * 1e6) / 1e6,
    usd: money(bytes * price),
    subjects,
  };
}

/** What some usage rows (or runs) add up to: their units, and their models' counters. */
interface Metered {
  units: CostUnits;
  models: ModelUsage;
}

function metered(rows: { units: Partial<CostUnits>; models?: ModelUsage }[]): Metered {
  return {
    units: sumUnits(rows.map((row) => row.units)),
    models: rows.reduce<ModelUsage>((sum, row) => addModelUsage(sum, row.models), addModelUsage(undefined, undefined)),
  };
}

/** The per-model dollars of some usage: tokens and images apart (an unpriced model adds nothing). */
function modelDollars(sheet: PriceSheet, models: ModelUsage): { tokens: number; images: number } {
  let tokens = 0;
  let images = 0;
  for (const model of Object.keys(models)) {
    const cost = modelCostOf(sheet, model, models[model]!);
    tokens += cost.tokens_usd;
    images += cost.images_usd;
  }
  return { tokens, images };
}

/** The units at the sheet's unit prices, plus every priced model's tokens and images. */
function usdOf(sheet: PriceSheet, usage: Metered): number {
  const { tokens, images } = modelDollars(sheet, usage.models);
  return priceOf(sheet, usage.units) + tokens + images;
}

/**
 * Dollars by bill line: each unit on each of its lines (DynamoDB's stored bytes are billed twice, as storage and as
 * backups), and the models' dollars in the services of the aggregate units
 * that count them (`inputTokens` → "Bedrock tokens", `images` → "Bedrock images"), which the sheet prices at 0. The
 * tokens' units are every token: the aggregate input and output tokens plus the models' prompt-cache reads and
 * writes (which the aggregate `inputTokens` leaves out); model calls are a service of their own ("Bedrock calls").
 */
function byService(sheet: PriceSheet, usage: Metered): Map<string, Omit<ServiceLine, 'service'>> {
  const services = new Map<string, Omit<ServiceLine, 'service'>>();
  const add = (line: PricedLine, units: number, usd: number) => {
    const entry = services.get(line.line) ?? { aws_service: line.service, usage_type: line.usage_type, units: 0, usd: 0 };
    entry.units += units;
    entry.usd += usd;
    services.set(line.line, entry);
  };
  for (const name of COST_UNIT_NAMES)
    for (const line of sheet.units[name].lines) add(line, usage.units[name], usage.units[name] * line.usd_per_unit);
  const { tokens, images } = modelDollars(sheet, usage.models);
  const cacheTokens = Object.values(usage.models).reduce(
    (sum, counters) => sum + (counters.cache_read_tokens ?? 0) + (counters.cache_write_tokens ?? 0),
    0,
  );
  add(sheet.units.inputTokens.lines[0]!, cacheTokens, tokens);
  add(sheet.units.images.lines[0]!, 0, images);
  return services;
}

/** Each UTC day from `from` to `to`, both included, priced by service. */
function daysOf(from: string, to: string, sheet: PriceSheet, usage: UsageRow[]): CostReport['days'] {
  const rowsByDay = new Map<string, UsageRow[]>();
  for (const row of usage) rowsByDay.set(row.day, [...(rowsByDay.get(row.day) ?? []), row]);
  const days: CostReport['days'] = [];
  for (let time = Date.parse(`${from}T00:00:00Z`); time <= Date.parse(`${to}T00:00:00Z`); time += 86_400_000) {
    const day = new Date(time).toISOString().slice(0, 10);
    const totals = metered(rowsByDay.get(day) ?? []);
    const usd_by_service = Object.fromEntries([...byService(sheet, totals)].map(([service, entry]) => [service, money(entry.usd)]));
    days.push({ day, usd_by_service, total_usd: money(usdOf(sheet, totals)) });
  }
  return days;
}

/** One line per model: its counters and dollars, most expensive first, then the unpriced by id. */
function modelLines(sheet: PriceSheet, models: ModelUsage): ModelCostLine[] {
  const lines = Object.keys(models).map((model): ModelCostLine => {
    const counters = models[model]!;
    const cost = modelCostOf(sheet, model, counters);
    return {
      model,
      input_tokens: counters.input_tokens ?? 0,
      output_tokens: counters.output_tokens ?? 0,
      cache_read_tokens: counters.cache_read_tokens ?? 0,
      cache_write_tokens: counters.cache_write_tokens ?? 0,
      images:
        (counters.images_standard_1024 ?? 0) +
        (counters.images_standard_2048 ?? 0) +
        (counters.images_premium_1024 ?? 0) +
        (counters.images_premium_2048 ?? 0),
      usd: cost.priced ? money(cost.tokens_usd + cost.images_usd) : null,
      priced: cost.priced,
      source: cost.source,
    };
  });
  const byId = (a: ModelCostLine, b: ModelCostLine) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0);
  return lines.sort((a, b) => {
    if (a.usd === null || b.usd === null) return a.usd === b.usd ? byId(a, b) : a.usd === null ? 1 : -1;
    return b.usd - a.usd || byId(a, b);
  });
}

function workflowCosts(sheet: PriceSheet, executions: FinishedExecutionCost[]): WorkflowCost[] {
  const byWorkflow = new Map<string, { project: string; workflow_id: string; prices: number[] }>();
  for (const execution of executions) {
    const key = JSON.stringify([execution.project, execution.workflow_id]);
    const entry = byWorkflow.get(key) ?? { project: execution.project, workflow_id: execution.workflow_id, prices: [] };
    entry.prices.push(usdOf(sheet, metered([execution])));
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
  return Object.fromEntries(
    COST_UNIT_NAMES.map((name) => [name, rows.reduce((sum, row) => sum + (row[name] ?? 0), 0)]),
  ) as unknown as CostUnits;
}

/** Dollars to a millionth of a cent: per-request figures are that small. */
const money = (usd: number) => Math.round(usd * 1e8) / 1e8;

/** A model's counts: its tokens of each kind and its images, which are not added up (they are priced apart). */
const MODEL_COUNT_COLUMNS = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'images'] as const;

/** One row of the CSV and of the table: label, count, dollars, and for a model its counts (MODEL_COUNT_COLUMNS). */
interface ReportRow {
  label: string;
  count: string;
  usd: string;
  model?: ModelCostLine;
  /** A service line's place on the bill (CSV_BILL_COLUMNS). */
  bill?: Pick<ServiceLine, 'aws_service' | 'usage_type'>;
}

/** Where a service line appears on the bill, so a spreadsheet reconciles it with Cost Explorer. */
const CSV_BILL_COLUMNS = ['aws_service', 'usage_type'] as const;

/** The report's figures as rows: what the CSV and the terminal table both show. */
function reportRows(report: CostReport): ReportRow[] {
  const dollars = (usd: number | null, digits: number) => (usd === null ? '' : usd.toFixed(digits));
  const row = (label: string, count: string, usd: string): ReportRow => ({ label, count, usd });
  return [
    ...report.services.map(
      (service): ReportRow => ({ ...row(service.service, String(service.units), dollars(service.usd, 8)), bill: service }),
    ),
    // A model's row has no one count: its tokens of each kind and its images are counts of their own (model columns);
    // its dollars are in the Bedrock services above.
    ...report.models.map(
      (model): ReportRow => ({
        label: `model ${model.model}`,
        count: '',
        usd: model.usd === null ? 'unpriced' : dollars(model.usd, 8),
        model,
      }),
    ),
    row('total', '', dollars(report.total_usd, 8)),
    // What the total leaves out: a model the sheet cannot price (its ids, space-separated: an id has no spaces).
    ...(report.unpriced_models.length > 0 ? [row('unpriced models', '', report.unpriced_models.join(' '))] : []),
    row('per million webhook events', '', dollars(report.per_million_webhook_events, 6)),
    row('per execution (mean)', String(report.per_run.runs), dollars(report.per_run.mean_usd, 8)),
    row('per execution (p95)', String(report.per_run.runs), dollars(report.per_run.p95_usd, 8)),
    ...report.fixed_monthly_usd.map((fixed) => row(`fixed monthly: ${fixed.item}`, String(fixed.count), dollars(fixed.usd, 2))),
  ];
}

/**
 * The CSV a spreadsheet opens: a header row, one row per service, one per model ("unpriced" when it cannot be), then
 * the totals, with an `unpriced models` row under the total when it leaves any out. The model rows fill the model
 * columns (their tokens of each kind and their images), the service rows the bill's service and usage type.
 */
export function costReportCsv(report: CostReport): string {
  const rows = [
    ['service', 'units', 'usd', ...MODEL_COUNT_COLUMNS, ...CSV_BILL_COLUMNS],
    ...reportRows(report).map((row) => [
      row.label,
      row.count,
      row.usd,
      ...MODEL_COUNT_COLUMNS.map((column) => (row.model ? String(row.model[column]) : '')),
      ...CSV_BILL_COLUMNS.map((column) => row.bill?.[column] ?? ''),
    ]),
  ];
  return `${rows.map((row) => row.map(csvField).join(',')).join('\r\n')}\r\n`;
}

/**
 * One CSV field. A spreadsheet reads a cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return as a formula
 * (model ids are user data): such a cell gets a leading `'`, which shows as text, per OWASP's CSV injection advice.
 * A plain number (a negative count) is no formula and stays a number.
 */
function csvField(value: string): string {
  const cell = /^[=+\-@\t\r]/.test(value) && !/^-\d+(\.\d+)?$/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
}

/** A model's counts in words, the kinds it has: `1000 input + 100 output tokens, 2 images` (`no use` when none). */
function modelCounts(model: ModelCostLine): string {
  const tokens = (['input', 'output', 'cache_read', 'cache_write'] as const)
    .filter((kind) => model[`${kind}_tokens`] > 0)
    .map((kind) => `${model[`${kind}_tokens`]} ${kind.replace('_', ' ')}`);
  const parts = [
    ...(tokens.length > 0 ? [`${tokens.join(' + ')} tokens`] : []),
    ...(model.images > 0 ? [`${model.images} image${model.images === 1 ? '' : 's'}`] : []),
  ];
  return parts.length > 0 ? parts.join(', ') : 'no use';
}

/** A service's label in the table: data transfer's units are bytes, priced per GB. */
function tableLabel(report: CostReport, label: string): string {
  const transfer = report.data_transfer_out;
  return label === transfer.service ? `${label} (bytes, $${transfer.usd_per_gb} per GB)` : label;
}

/**
 * What a person at a terminal reads: the same rows as the CSV (a model's counts in its label), aligned, under a line
 * saying what they cover, with a warning under the total when it leaves out unpriced models.
 */
export function costReportTable(report: CostReport, topSubjects = 10): string {
  const rows: [string, string, string][] = [
    ['', 'units', 'USD'],
    // A model's counts go in its label: its tokens and images are not one count. The unpriced models are said in
    // words under the total (below) rather than as a row.
    ...reportRows(report)
      .filter((row) => row.label !== 'unpriced models')
      .map((row): [string, string, string] => [
        row.model ? `${row.label} (${modelCounts(row.model)})` : tableLabel(report, row.label),
        row.count,
        row.usd,
      ]),
  ];
  const total = rows.findIndex((row) => row[0] === 'total');
  const subjects = report.subjects.slice(0, topSubjects);
  if (subjects.length > 0)
    rows.push(
      ['', '', ''],
      [`most expensive subjects (${subjects.length} of ${report.subjects.length})`, '', ''],
      ...subjects.map((subject): [string, string, string] => [
        `  ${subject.subject}${subject.verify ? ' (admin verify)' : ''}`,
        '',
        subject.usd.toFixed(8),
      ]),
    );
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  const lines = rows.map(([label, count, usd]) =>
    `${label.padEnd(widths[0]!)}  ${count.padStart(widths[1]!)}  ${usd.padStart(widths[2]!)}`.trimEnd(),
  );
  const heading = `Cost ${report.from} to ${report.to} (UTC days), ${report.price_sheet.region} prices of ${report.price_sheet.date}`;
  // Under the total, a line no one can miss: the period's spend is more than the total says.
  if (report.unpriced_models.length > 0)
    lines.splice(total + 1, 0, `total leaves out unpriced models: ${report.unpriced_models.join(', ')}`);
  return `${heading}\n\n${lines.join('\n')}\n`;
}

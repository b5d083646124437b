import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { PROJECT_ID_PATTERN } from '#shared/limits.ts';
import { createUsageRepository } from '#shared/metering/usage-repository.ts';
import { createExecutionCostsRepository } from '#executions/executions-repository.ts';
import {
  costReport,
  costReportCsv,
  costReportTable,
  MAX_REPORT_DAYS,
  periodDays,
  type CostReport,
  type FinishedExecutionCost,
  type UsageRow,
} from '#lib/pricing/cost-report.ts';
import { loadPriceSheet, type PriceSheet } from '#lib/pricing/price-sheet.ts';
import { createLinksRepository } from '#inbound/links-repository.ts';
import { forecastTable, usdText, type LinkSample } from '#lib/pricing/cost-forecast.ts';
import { costReportHtml } from '#lib/pricing/cost-html.ts';
import { DEFAULT_DATA_DIR, type AdminTarget } from './target.ts';
import { CliText } from './cli-text.ts';
import { estimate, estimateOptions, ESTIMATE_DAYS, type EstimateFlags } from './cost-estimate.ts';
import { reportForecasts } from '#lib/pricing/cost-forecast.ts';
import { requireId, UsageError } from './usage-error.ts';

interface CostFlags extends EstimateFlags {
  from?: string;
  to?: string;
  project?: string;
  link?: string;
  csv?: boolean;
  html?: string;
  json?: boolean;
  region?: string;
}

/** Flags that belong to one cost action only: given to the other, they are a usage mistake, not ignored. */
const ESTIMATE_ONLY = ['events', 'dialogs', 'runs', 'months', 'workflow'] as const;
const REPORT_ONLY = ['link', 'csv', 'html'] as const;

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function dayOption(value: string | undefined, fallback: string, name: string): string {
  if (value === undefined) return fallback;
  const time = DAY.test(value) ? Date.parse(`${value}T00:00:00Z`) : Number.NaN;
  if (Number.isNaN(time)) throw new UsageError(`--${name} must be a date YYYY-MM-DD`);
  // Date rolls a day the month does not have over into the next month (2026-02-30 reads as 2026-03-02), which
  // would report on other days than asked: a date exists only if it comes back as written.
  if (new Date(time).toISOString().slice(0, 10) !== value)
    throw new UsageError(`--${name} must be a date YYYY-MM-DD; ${value} does not exist`);
  return value;
}

/** A report's or an estimate's period, checked before anything is read: from not after to, and not too long to report. */
function checkedPeriod(from: string, to: string): { from: string; to: string } {
  if (from > to) throw new UsageError('--from must not be after --to');
  const days = periodDays(from, to);
  if (days > MAX_REPORT_DAYS) {
    throw new UsageError(
      `--from ${from} --to ${to} is ${days.toLocaleString('en-US')} days; a period is at most ${MAX_REPORT_DAYS} days, as long as ` +
        `usage is kept`,
    );
  }
  return { from, to };
}

/**
 * `cost report`: the metered units of the period, priced with `lib/pricing/<region>.json`. Reads the usage table
 * (one Query per subject, or a Scan for all of them) and, for the cost per execution, the finished executions' records; with
 * `--html FILE`, also the links table (each link's type, for the forecast). `cost estimate`: see runCostEstimate.
 */
export async function runCostCommand(target: AdminTarget, args: string[], flags: CostFlags, terminal: boolean): Promise<object> {
  if (args[0] === 'estimate') return runCostEstimate(target, flags, terminal);
  if (args[0] !== 'report') throw new UsageError(`unknown cost action ${args[0] ?? ''}; use report or estimate`);
  const misplaced = ESTIMATE_ONLY.find((name) => flags[name] !== undefined);
  if (misplaced) throw new UsageError(`--${misplaced} is a flag of cost estimate, not cost report`);
  if (flags.html !== undefined && (flags.csv || flags.html === ''))
    throw new UsageError(flags.csv ? 'give --html FILE or --csv, not both' : '--html needs a file name');
  if (flags.project && flags.link) throw new UsageError('give --project or --link, not both');
  // The page's forecast adds the deployment's fixed cost to the traffic it measured: one subject's traffic would not fit it.
  if (flags.html !== undefined && (flags.project || flags.link))
    throw new UsageError('--html reports the whole deployment; narrow with --project or --link in the table, --json or --csv report');
  if (flags.project !== undefined && !PROJECT_ID_PATTERN.test(flags.project))
    throw new UsageError('--project must be 1-64 letters, digits, ".", "_" or "-"');
  const link = flags.link === undefined ? undefined : requireId(flags.link, 'cost report', 'link_id');
  const to = dayOption(flags.to, new Date().toISOString().slice(0, 10), 'to');
  const { from } = checkedPeriod(dayOption(flags.from, `${to.slice(0, 8)}01`, 'from'), to);
  const html = flags.html === undefined ? undefined : await htmlTarget(flags.html);
  const sheet = priceSheetFor(target);
  // A typo in a link id would read as "this link cost nothing": a link the table does not know is refused.
  if (link !== undefined && !(await createLinksRepository(target.dynamo, target.tables.links).getLink(link)))
    throw new Error(`link ${link} not found`);
  const subject = flags.project ? `project#${flags.project}` : link ? `link#${link}` : undefined;
  const usage = await usageRows(target, from, to, subject);
  const executionCosts = link ? [] : await finishedExecutionCosts(target, from, to, flags.project);
  const report = costReport({ from, to, sheet, usage, executionCosts, operations: target.operationsMode });
  if (flags.csv) return new CliText(costReportCsv(report));
  if (html !== undefined) return writeHtmlReport(target, html, report, usage, terminal && !flags.json);
  // A person at a terminal reads a table; --json, and any pipe, gets the report as JSON.
  return terminal && !flags.json ? new CliText(costReportTable(report)) : report;
}

/**
 * The price sheet of the deployment's region, found as the SDK finds it (--region, AWS_REGION, the AWS profile); the
 * twin's is us-east-1's. A region without a sheet is refused: another region's prices would be a wrong bill.
 */
function priceSheetFor(target: AdminTarget): PriceSheet {
  return loadPriceSheet(target.region);
}

/**
 * `--html FILE` as an absolute path, checked before the report is read: its directory must exist. None is made but
 * the CLI's own `.local` (of the working directory, where the data directory lives by default), and that one alone:
 * a typo would otherwise leave a new directory behind (at the top of the file system, as root), and Node's recursive
 * mkdir never returns on some paths (under /proc).
 */
async function htmlTarget(file: string): Promise<string> {
  // resolve() drops a trailing slash: `--html reports/` would become a file named `reports`.
  if (/[/\\]$/.test(file))
    throw new UsageError(`--html names a file, and ${file} ends with a slash; name one in it, e.g. ${file}cost.html`);
  const path = resolve(file);
  const existing = await stat(path).catch(() => undefined);
  if (existing?.isDirectory()) throw new UsageError(`--html: ${path} is a directory; name a file in it, e.g. ${join(path, 'cost.html')}`);
  const directory = dirname(path);
  if (directory === dirname(resolve(DEFAULT_DATA_DIR))) await mkdir(directory).catch(() => undefined);
  const found = await stat(directory).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT')
      throw new UsageError(`--html: the directory ${directory} does not exist; create it first, or name a file in a directory that exists`);
    if (error.code === 'ENOTDIR') throw new UsageError(`--html: ${directory} is not a directory`);
    throw new UsageError(`--html: cannot write into ${directory} (${error.code ?? String(error)})`);
  });
  if (!found.isDirectory()) throw new UsageError(`--html: ${directory} is not a directory`);
  return path;
}

/**
 * `cost report --html FILE`: the report and its two forecasts (next month at the period's traffic, and at twice
 * that) as one self-contained page. Answers where it went and the totals it shows.
 */
async function writeHtmlReport(target: AdminTarget, path: string, report: CostReport, usage: UsageRow[], asText: boolean): Promise<object> {
  const forecasts = reportForecasts(report, await linkSamples(target, usage));
  const html = costReportHtml({ report, forecasts });
  try {
    await writeFile(path, html);
  } catch (error) {
    // The disk's answer (no space, no permission), not a mistake in how the command was called: exit 1, no usage text.
    throw new Error(`--html: cannot write ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const answer = {
    html: path,
    bytes: Buffer.byteLength(html),
    from: report.from,
    to: report.to,
    total_usd: report.total_usd,
    forecast_next_month_usd: forecasts.current.monthly_usd,
    forecast_twice_traffic_usd: forecasts.double.monthly_usd,
  };
  if (!asText) return answer;
  const dollars = (usd: number | null) => (usd === null ? 'incomplete (see the page)' : `$${usdText(usd)}`);
  return new CliText(
    `Wrote ${path} (${answer.bytes.toLocaleString('en-US')} bytes): cost ${report.from} to ${report.to} ${dollars(report.total_usd)}; ` +
      `next month ${dollars(answer.forecast_next_month_usd)}, at twice the traffic ${dollars(answer.forecast_twice_traffic_usd)}\n`,
  );
}

/**
 * `cost estimate`: a month's cost (× --months) at the traffic asked for, from the per-unit averages of the period
 * (default the last 30 days): every subject's usage and every finished execution are read, --project and --workflow only
 * narrow which executions the execution average comes from.
 */
async function runCostEstimate(target: AdminTarget, flags: CostFlags, terminal: boolean): Promise<object> {
  const misplaced = REPORT_ONLY.find((name) => flags[name] !== undefined);
  if (misplaced) throw new UsageError(`--${misplaced} is a flag of cost report, not cost estimate`);
  const options = estimateOptions(flags);
  const today = new Date().toISOString().slice(0, 10);
  const daysBefore = (day: string, days: number) => new Date(Date.parse(`${day}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);
  const to = dayOption(flags.to, today, 'to');
  const { from } = checkedPeriod(dayOption(flags.from, daysBefore(to, ESTIMATE_DAYS - 1), 'from'), to);
  const sheet = priceSheetFor(target);
  const usage = await usageRows(target, from, to, undefined);
  const executionCosts = await finishedExecutionCosts(target, from, to, undefined);
  const report = costReport({ from, to, sheet, usage, executionCosts, operations: target.operationsMode });
  const forecast = estimate(report, await linkSamples(target, usage), options);
  return terminal && !flags.json ? new CliText(forecastTable(forecast)) : forecast;
}

/** Each link subject of the usage: the events it accepted in the period, and its type from the links table. */
async function linkSamples(target: AdminTarget, usage: UsageRow[]): Promise<LinkSample[]> {
  const events = new Map<string, number>();
  for (const row of usage)
    if (row.subject.startsWith('link#')) events.set(row.subject, (events.get(row.subject) ?? 0) + (row.units.webhookEvents ?? 0));
  const links = createLinksRepository(target.dynamo, target.tables.links);
  const samples: LinkSample[] = [];
  const pending = [...events];
  // A few reads at a time: a deployment with thousands of links must not send thousands at once.
  for (let start = 0; start < pending.length; start += 16) {
    const batch = pending.slice(start, start + 16).map(async ([subject, count]) => {
      const link = await links.getLink(subject.slice('link#'.length));
      return { subject, type: link?.connector_type ?? null, events: count };
    });
    samples.push(...(await Promise.all(batch)));
  }
  return samples;
}

async function usageRows(target: AdminTarget, from: string, to: string, subject: string | undefined): Promise<UsageRow[]> {
  return createUsageRepository(target.dynamo, target.tables.usage).itemsBetween(from, to, subject);
}

/** Executions that finished in the period: their records keep the units their steps spent. */
async function finishedExecutionCosts(
  target: AdminTarget,
  from: string,
  to: string,
  project: string | undefined,
): Promise<FinishedExecutionCost[]> {
  const executions = await createExecutionCostsRepository(target.dynamo, target.tables.executions).finishedBetween(from, to, project);
  return executions.map(({ project_id, workflow_id, cost_units }) => ({
    project: project_id,
    workflow_id,
    units: cost_units,
    models: cost_units.models,
  }));
}

import { QueryCommand, ScanCommand, type QueryCommandInput, type ScanCommandInput } from '@aws-sdk/lib-dynamodb';
import { COST_UNIT_NAMES, type CostUnits } from '#shared/metering/cost-meter.ts';
import { PROJECT_ID_PATTERN } from '#shared/limits.ts';
import { usageAttribute } from '#shared/metering/usage-meter.ts';
import { costReport, costReportCsv, costReportTable, type RunCost, type UsageRow } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';
import type { AdminTarget } from './target.ts';
import { CliText } from './cli-text.ts';
import { requireId, UsageError } from './usage-error.ts';

interface CostFlags {
  from?: string;
  to?: string;
  project?: string;
  link?: string;
  csv?: boolean;
  json?: boolean;
  region?: string;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function dayOption(value: string | undefined, fallback: string, name: string): string {
  if (value === undefined) return fallback;
  const time = DAY.test(value) ? Date.parse(`${value}T00:00:00Z`) : Number.NaN;
  if (Number.isNaN(time)) throw new UsageError(`--${name} must be a date YYYY-MM-DD`);
  // Date rolls a day the month does not have over into the next month (2026-02-30 reads as 2026-03-02), which
  // would report on other days than asked: a date exists only if it comes back as written.
  if (new Date(time).toISOString().slice(0, 10) !== value) throw new UsageError(`--${name} must be a date YYYY-MM-DD; ${value} does not exist`);
  return value;
}

/**
 * `cost report`: the metered units of the period, priced with `lib/pricing/<region>.json`. Reads the usage table
 * (one Query per subject, or a Scan for all of them) and, for the cost per run, the finished runs' records.
 */
export async function runCostCommand(target: AdminTarget, args: string[], flags: CostFlags, terminal: boolean): Promise<object> {
  if (args[0] !== 'report') throw new UsageError(`unknown cost action ${args[0] ?? ''}; use report`);
  if (flags.project && flags.link) throw new UsageError('give --project or --link, not both');
  if (flags.project !== undefined && !PROJECT_ID_PATTERN.test(flags.project)) throw new UsageError('--project must be 1-64 letters, digits, ".", "_" or "-"');
  const link = flags.link === undefined ? undefined : requireId(flags.link, 'cost report', 'link_id');
  const today = new Date().toISOString().slice(0, 10);
  const from = dayOption(flags.from, `${today.slice(0, 8)}01`, 'from');
  const to = dayOption(flags.to, today, 'to');
  if (from > to) throw new UsageError('--from must not be after --to');
  // Prices are the deployment's region's (--region, else the SDK's); the twin's are us-east-1's.
  const sheet = loadPriceSheet(flags.region ?? (target.deployed ? process.env.AWS_REGION : undefined) ?? 'us-east-1');
  const subject = flags.project ? `project#${flags.project}` : link ? `link#${link}` : undefined;
  const usage = await usageRows(target, from, to, subject);
  const runCosts = link ? [] : await finishedRunCosts(target, from, to, flags.project);
  const report = costReport({ from, to, sheet, usage, runCosts });
  if (flags.csv) return new CliText(costReportCsv(report));
  // A person at a terminal reads a table; --json, and any pipe, gets the report as JSON.
  return terminal && !flags.json ? new CliText(costReportTable(report)) : report;
}

async function usageRows(target: AdminTarget, from: string, to: string, subject: string | undefined): Promise<UsageRow[]> {
  const range = { ':from': `${from}#`, ':to': `${to}#~` };
  const base = subject
    ? ({ TableName: target.tables.usage, KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to', ExpressionAttributeValues: { ':pk': subject, ...range } } satisfies QueryCommandInput)
    : ({ TableName: target.tables.usage, FilterExpression: 'sk BETWEEN :from AND :to', ExpressionAttributeValues: range } satisfies ScanCommandInput);
  const rows: UsageRow[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await target.dynamo.send(subject ? new QueryCommand({ ...base, ExclusiveStartKey }) : new ScanCommand({ ...base, ExclusiveStartKey }));
    for (const item of page.Items ?? []) rows.push({ subject: String(item.pk), day: String(item.sk).slice(0, 10), units: unitsOf(item) });
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return rows;
}

function unitsOf(item: Record<string, unknown>): Partial<CostUnits> {
  return Object.fromEntries(COST_UNIT_NAMES.map((name) => [name, Number(item[usageAttribute(name)] ?? 0)]));
}

/** Runs that finished in the period (their records keep the units their steps spent); a Scan, as reports are rare. */
async function finishedRunCosts(target: AdminTarget, from: string, to: string, project: string | undefined): Promise<RunCost[]> {
  const costs: RunCost[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await target.dynamo.send(
      new ScanCommand({
        TableName: target.tables.executions,
        FilterExpression: `attribute_exists(cost_units) AND finished_at BETWEEN :from AND :to${project ? ' AND project_id = :project' : ''}`,
        ExpressionAttributeValues: { ':from': `${from}T`, ':to': `${to}T~`, ...(project ? { ':project': project } : {}) },
        ProjectionExpression: 'cost_units, project_id, workflow_id',
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) costs.push({ project: String(item.project_id), workflow_id: String(item.workflow_id), units: item.cost_units as Partial<CostUnits> });
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return costs;
}

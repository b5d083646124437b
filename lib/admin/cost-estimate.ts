import { PROJECT_ID_PATTERN, WORKFLOW_ID_PATTERN } from '#shared/limits.ts';
import { forecastCost, measureAverages, periodVolumes, type Forecast, type LinkSample, type Volumes } from '#lib/pricing/cost-forecast.ts';
import type { CostReport } from '#lib/pricing/cost-report.ts';
import { UsageError } from './usage-error.ts';

/** `cost estimate`'s own flags, as given. */
export interface EstimateFlags {
  events?: string;
  dialogs?: string;
  runs?: string;
  months?: string;
  workflow?: string;
  project?: string;
}

export interface EstimateOptions {
  /** Undefined when no count was given: the period's own traffic, scaled to 30 days. */
  volumes: Volumes | undefined;
  months: number;
  workflow: string | undefined;
  project: string | undefined;
}

/** A month's traffic far beyond any deployment, but still exact in a double and in the dollars it gives. */
const MAX_COUNT = 1_000_000_000_000;
const MAX_MONTHS = 36;
/** The period the averages come from when --from and --to are not given: the last 30 days up to today. */
export const ESTIMATE_DAYS = 30;

function countOption(value: string | undefined, name: string, max: number, min = 0): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,13}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(
      `--${name} must be a whole number from ${min} to ${max.toLocaleString('en-US')}; got ${JSON.stringify(value.slice(0, 40))}`,
    );
  }
  return Number(value);
}

/**
 * Checks the estimate's flags. The counts are a month's traffic: the ones not given are 0, and when none is given the
 * estimate is for the measured period's own traffic scaled to 30 days.
 */
export function estimateOptions(flags: EstimateFlags): EstimateOptions {
  const events = countOption(flags.events, 'events', MAX_COUNT);
  const dialogs = countOption(flags.dialogs, 'dialogs', MAX_COUNT);
  const executions = countOption(flags.runs, 'runs', MAX_COUNT);
  const months = countOption(flags.months, 'months', MAX_MONTHS, 1) ?? 1;
  if (flags.workflow !== undefined && !WORKFLOW_ID_PATTERN.test(flags.workflow))
    throw new UsageError('--workflow must be a workflow id: 1-64 letters, digits, _ or -');
  if (flags.project !== undefined && !PROJECT_ID_PATTERN.test(flags.project))
    throw new UsageError('--project must be 1-64 letters, digits, ".", "_" or "-"');
  const given = [events, dialogs, executions].some((count) => count !== undefined);
  return {
    volumes: given ? { events: events ?? 0, dialogs: dialogs ?? 0, runs: executions ?? 0 } : undefined,
    months,
    workflow: flags.workflow,
    project: flags.project,
  };
}

/** The forecast from a measured period's report (every subject) and its links, as the options ask. */
export function estimate(report: CostReport, links: LinkSample[], options: EstimateOptions): Forecast {
  const averages = measureAverages(report, links, { workflow: options.workflow, project: options.project, nowMs: Date.now() });
  return forecastCost({
    averages,
    fixed: report.fixed_monthly_usd,
    volumes: options.volumes ?? periodVolumes(averages),
    months: options.months,
    volumesFrom: options.volumes ? 'flags' : 'period',
  });
}

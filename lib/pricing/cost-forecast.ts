import { monthlyTraces, TRACES_FORMULA } from './xray-traces.ts';
import type { CostReport } from './cost-report.ts';

/**
 * The forecast: what a month (or several) would cost at a given traffic, from the per-unit averages a measured period
 * gives. Pure: it reads the period's `CostReport` (every dollar comes from it, priced as the report prices it) and,
 * per link subject of that period, the link's type and how many webhook events it accepted (what the report has no
 * field for). It never guesses: an average without samples is null, with the reason.
 */

type LinkType = 'calls' | 'dialogs';

/** One link subject of the period: its type (null when the link is not found) and the events it accepted. */
export interface LinkSample {
  subject: string;
  type: LinkType | null;
  events: number;
}

/** Per call event or per dialog: the links' dollars (their nightly collection included) over the events they accepted. */
interface EventAverage {
  usd: number | null;
  /** The events accepted on links of this type in the period (calls or dialogs): the samples. */
  events: number;
  links: number;
  /** The dollars the average divides: everything billed to those links in the period. */
  usd_total: number;
  /** The part of `usd` that is data transfer out (the links' answers to webhook requests); null with `usd`. */
  data_transfer_usd: number | null;
  reason: string | null;
}

/** Per execution: the execution records' step cost plus the project's request-side cost per execution. */
interface ExecutionAverage {
  usd: number | null;
  /** Mean step cost of the chosen executions, from their records (the report's `workflows`). */
  step_usd: number | null;
  /** Each chosen execution's share of its project's request-side cost (the project's dollars not spent by its executions' steps). */
  request_usd: number | null;
  runs: number;
  workflow: string | null;
  project: string | null;
  usd_total: number;
  /** The part of `usd` that is data transfer out: the project's answers (streams above all) per execution; null with `usd`. */
  data_transfer_usd: number | null;
  reason: string | null;
}

export interface Averages {
  from: string;
  to: string;
  price_sheet: CostReport['price_sheet'];
  /** The days the period covers up to now: a period ending today counts today's elapsed part only. */
  days: number;
  days_with_usage: number;
  call_event: EventAverage;
  dialog: EventAverage;
  run: ExecutionAverage;
  /** The period's own traffic: call events, dialogs and executions the averages rest on. */
  volumes: Volumes;
  /** Link subjects left out of both event averages, as their type is unknown (the link is not in the links table). */
  unknown_links: { subject: string; usd: number; events: number }[];
  /** Projects billed in the period without a finished execution (polls, approvals still awaited): in no execution average. */
  projects_without_runs: { subject: string; usd: number }[];
}

export interface Volumes {
  events: number;
  dialogs: number;
  runs: number;
}

interface ForecastLine {
  item: 'call events' | 'dialogs' | 'runs' | 'fixed monthly' | 'X-Ray traces';
  /** Per month (the fixed line: 1; the X-Ray line: the traces recorded). */
  count: number;
  usd_each: number | null;
  /** count × usd_each; null when the count is not 0 and there is no average to price it with. */
  monthly_usd: number | null;
  /** What the average rests on, in words (`20 events on 1 link`). */
  samples: string;
  reason: string | null;
}

export interface Forecast {
  from: string;
  to: string;
  price_sheet: CostReport['price_sheet'];
  months: number;
  /** `flags`: the counts asked for; `period`: the measured period's own traffic scaled to 30 days (× `scale`). */
  volumes_from: 'flags' | 'period';
  scale: number;
  volumes: Volumes;
  averages: Averages;
  lines: ForecastLine[];
  fixed_monthly_usd: CostReport['fixed_monthly_usd'];
  /** One month at these volumes; null when a line asked for has no average (see `warnings`). */
  monthly_usd: number | null;
  /** monthly_usd × months; null likewise. */
  total_usd: number | null;
  /** What the lines that could be priced cost over the months: a lower bound when total_usd is null. */
  priced_total_usd: number;
  /** The measured averages per million call events and per million dialogs (null without samples): what ingest costs. */
  per_million_usd: { call_events: number | null; dialogs: number | null };
  warnings: string[];
}

const DAY_MS = 86_400_000;
const MONTH_DAYS = 30;

/**
 * The per-unit averages of a period. `select` narrows the execution average to a workflow (in every project, or in
 * `project`) or to a project's workflows; the event averages are every link's of the report.
 */
export function measureAverages(
  report: CostReport,
  links: LinkSample[],
  select: { workflow?: string; project?: string; nowMs?: number } = {},
): Averages {
  const usdOf = new Map(report.subjects.map((subject) => [subject.subject, subject.usd]));
  const transferOf = new Map(report.data_transfer_out.subjects.map((subject) => [subject.subject, subject.usd]));
  const known = new Map(links.map((link) => [link.subject, link]));
  const linkSubjects = report.subjects.filter((subject) => subject.subject.startsWith('link#'));
  const unknown_links = linkSubjects
    .filter((subject) => (known.get(subject.subject)?.type ?? null) === null)
    .map((subject) => ({ subject: subject.subject, usd: subject.usd, events: known.get(subject.subject)?.events ?? 0 }));
  const period = `from ${report.from} to ${report.to}`;
  const eventAverage = (type: LinkType, noun: string): EventAverage => {
    const ofType = linkSubjects.filter((subject) => known.get(subject.subject)?.type === type);
    const events = ofType.reduce((sum, subject) => sum + known.get(subject.subject)!.events, 0);
    const usd_total = money(ofType.reduce((sum, subject) => sum + subject.usd, 0));
    const transfer = ofType.reduce((sum, subject) => sum + (transferOf.get(subject.subject) ?? 0), 0);
    const reason =
      events > 0
        ? null
        : ofType.length === 0
          ? `no ${type} link was billed ${period}`
          : `the ${type} links accepted no ${noun} ${period} (they cost $${usdText(usd_total)} without one)`;
    return {
      usd: events > 0 ? money(usd_total / events) : null,
      events,
      links: ofType.length,
      usd_total,
      data_transfer_usd: events > 0 ? money(transfer / events) : null,
      reason,
    };
  };
  const call_event = eventAverage('calls', 'call event');
  const dialog = eventAverage('dialogs', 'dialog');
  const execution = executionAverage(report, usdOf, transferOf, select, period);
  return {
    from: report.from,
    to: report.to,
    price_sheet: report.price_sheet,
    days: measuredDays(report, select.nowMs ?? Date.now()),
    days_with_usage: report.days.filter((day) => day.total_usd > 0).length,
    call_event,
    dialog,
    run: execution,
    volumes: { events: call_event.events, dialogs: dialog.events, runs: execution.runs },
    unknown_links,
    projects_without_runs: report.subjects
      .filter(
        (subject) =>
          subject.subject.startsWith('project#') &&
          !subject.verify &&
          !report.workflows.some((workflow) => `project#${workflow.project}` === subject.subject),
      )
      .map((subject) => ({ subject: subject.subject, usd: subject.usd })),
  };
}

/**
 * How many days the period measured: whole days, except a period that runs into today (or later), which has
 * measured only up to now. Scaling a morning's traffic as a whole day's would forecast a fraction of the month.
 * Never less than an hour, so a period that just began does not multiply its first minutes by thousands.
 */
function measuredDays(report: CostReport, nowMs: number): number {
  const startMs = Date.parse(`${report.from}T00:00:00Z`);
  const endMs = Math.min(Date.parse(`${report.to}T00:00:00Z`) + DAY_MS, Math.max(nowMs, startMs + DAY_MS / 24));
  return Math.round(((endMs - startMs) / DAY_MS) * 100) / 100;
}

/**
 * The execution average: the chosen workflows' mean step cost (their execution records), plus, per execution, its project's
 * request-side cost: what the project was billed in the period (API requests, execute, approve, streams, polls,
 * its executions' steps) minus their step cost, shared equally by the project's finished executions.
 */
function executionAverage(
  report: CostReport,
  usdOf: Map<string, number>,
  transferOf: Map<string, number>,
  select: { workflow?: string; project?: string },
  period: string,
): ExecutionAverage {
  const byProject = new Map<string, { executions: number; stepUsd: number }>();
  for (const workflow of report.workflows) {
    const entry = byProject.get(workflow.project) ?? { executions: 0, stepUsd: 0 };
    entry.executions += workflow.runs;
    entry.stepUsd += workflow.mean_usd * workflow.runs;
    byProject.set(workflow.project, entry);
  }
  const requestPerExecution = (project: string) => {
    const entry = byProject.get(project)!;
    return Math.max(0, (usdOf.get(`project#${project}`) ?? 0) - entry.stepUsd) / entry.executions;
  };
  const chosen = report.workflows.filter(
    (workflow) =>
      (select.workflow === undefined || workflow.workflow_id === select.workflow) &&
      (select.project === undefined || workflow.project === select.project),
  );
  const executions = chosen.reduce((sum, workflow) => sum + workflow.runs, 0);
  const base = { runs: executions, workflow: select.workflow ?? null, project: select.project ?? null };
  if (executions === 0) {
    const of = [select.workflow ? ` of workflow ${select.workflow}` : '', select.project ? ` in project ${select.project}` : ''].join('');
    return {
      ...base,
      usd: null,
      step_usd: null,
      request_usd: null,
      usd_total: 0,
      data_transfer_usd: null,
      reason: `no execution${of} finished ${period}`,
    };
  }
  const stepTotal = chosen.reduce((sum, workflow) => sum + workflow.mean_usd * workflow.runs, 0);
  const requestTotal = chosen.reduce((sum, workflow) => sum + requestPerExecution(workflow.project) * workflow.runs, 0);
  // Steps send no answer: an execution's data transfer is its project's (part of the request side), shared the same way.
  const transferTotal = chosen.reduce(
    (sum, workflow) =>
      sum + ((transferOf.get(`project#${workflow.project}`) ?? 0) / byProject.get(workflow.project)!.executions) * workflow.runs,
    0,
  );
  return {
    ...base,
    usd: money((stepTotal + requestTotal) / executions),
    step_usd: money(stepTotal / executions),
    request_usd: money(requestTotal / executions),
    usd_total: money(stepTotal + requestTotal),
    data_transfer_usd: money(transferTotal / executions),
    reason: null,
  };
}

/**
 * The period's own traffic scaled to a 30-day month (in whole units), times `scale`: at 2, exactly twice the counts
 * of scale 1, so that `cost estimate` with those counts gives the same figure.
 */
export function periodVolumes(averages: Averages, scale = 1): Volumes {
  const perMonth = (count: number) => Math.round((count * MONTH_DAYS) / averages.days) * scale;
  return { events: perMonth(averages.volumes.events), dialogs: perMonth(averages.volumes.dialogs), runs: perMonth(averages.volumes.runs) };
}

/**
 * What `months` months cost at `volumes` a month: each count times its average, plus the fixed monthly cost. A line
 * whose average has no samples is null when its count is not 0 (with a warning), and so are the totals; the lines
 * that could be priced still are, and `priced_total_usd` adds them up.
 */
export function forecastCost(input: {
  averages: Averages;
  fixed: CostReport['fixed_monthly_usd'];
  volumes: Volumes;
  months: number;
  volumesFrom: 'flags' | 'period';
  scale?: number;
}): Forecast {
  const { averages, volumes, months } = input;
  const { call_event, dialog, run: execution } = averages;
  const executionSamples =
    execution.usd === null
      ? 'none'
      : `${plural(execution.runs, 'execution')}${execution.workflow ? ` of ${execution.workflow}` : ''}` +
        `${execution.project ? ` in ${execution.project}` : ''}: ` +
        `step $${usdText(execution.step_usd!)} + requests $${usdText(execution.request_usd!)}${transferText(execution.data_transfer_usd)}`;
  const line = (
    item: ForecastLine['item'],
    count: number,
    usd_each: number | null,
    samples: string,
    reason: string | null,
  ): ForecastLine => ({
    item,
    count,
    usd_each,
    monthly_usd: count === 0 ? 0 : usd_each === null ? null : money(count * usd_each),
    samples,
    reason: usd_each === null ? reason : null,
  });
  const fixedUsd = money(input.fixed.reduce((sum, fixed) => sum + fixed.usd, 0));
  const lines = [
    line(
      'call events',
      volumes.events,
      call_event.usd,
      call_event.usd === null
        ? 'none'
        : `${plural(call_event.events, 'event')} on ${plural(call_event.links, 'link')}${transferText(call_event.data_transfer_usd)}`,
      call_event.reason,
    ),
    line(
      'dialogs',
      volumes.dialogs,
      dialog.usd,
      dialog.usd === null
        ? 'none'
        : `${plural(dialog.events, 'dialog')} on ${plural(dialog.links, 'link')}${transferText(dialog.data_transfer_usd)}`,
      dialog.reason,
    ),
    line('runs', volumes.runs, execution.usd, executionSamples, execution.reason),
    line('fixed monthly', 1, fixedUsd, input.fixed.map((fixed) => `${fixed.count} × ${fixed.item}`).join(', '), null),
    // Sampled, so forecast from the counts rather than measured: a month of them records this many traces.
    line('X-Ray traces', monthlyTraces(volumes), averages.price_sheet.xray_usd_per_trace, TRACES_FORMULA, null),
  ];
  const unpriced = lines.filter((entry) => entry.monthly_usd === null);
  const priced = money(lines.reduce((sum, entry) => sum + (entry.monthly_usd ?? 0), 0));
  const warnings = unpriced.map(
    (entry) => `${entry.item}: ${entry.count} a month asked for, but ${entry.reason}; that line is left out (no average to price it with)`,
  );
  for (const project of averages.projects_without_runs) {
    warnings.push(
      `${project.subject} was billed $${usdText(project.usd)} without a finished execution: its cost is in no execution average`,
    );
  }
  for (const link of averages.unknown_links) {
    warnings.push(
      `${link.subject} is not in the links table, so its type is unknown: ` +
        `its $${usdText(link.usd)} and ${plural(link.events, 'event')} are in neither event average`,
    );
  }
  return {
    from: averages.from,
    to: averages.to,
    price_sheet: averages.price_sheet,
    months,
    volumes_from: input.volumesFrom,
    scale: input.scale ?? 1,
    volumes,
    averages,
    lines,
    fixed_monthly_usd: input.fixed,
    monthly_usd: unpriced.length > 0 ? null : priced,
    total_usd: unpriced.length > 0 ? null : money(priced * months),
    priced_total_usd: money(priced * months),
    per_million_usd: { call_events: perMillion(call_event.usd), dialogs: perMillion(dialog.usd) },
    warnings,
  };
}

const perMillion = (usd: number | null) => (usd === null ? null : Math.round(usd * 1e6 * 100) / 100);

/** What a person at a terminal reads: the lines aligned, the averages' samples, the totals and the warnings. */
export function forecastTable(forecast: Forecast): string {
  const { averages } = forecast;
  const dollars = (usd: number | null) => (usd === null ? '-' : usdText(usd));
  const rows: string[][] = [
    ['', 'count/month', 'USD each', 'USD/month', 'average from'],
    ...forecast.lines.map((line) => [
      line.item,
      String(line.count),
      dollars(line.usd_each),
      dollars(line.monthly_usd),
      line.usd_each === null ? `no samples: ${line.reason}` : line.samples,
    ]),
    [
      'total a month',
      '',
      '',
      dollars(forecast.monthly_usd),
      forecast.monthly_usd === null
        ? `incomplete; the priced lines add up to ${dollars(money(forecast.priced_total_usd / forecast.months))}`
        : '',
    ],
  ];
  if (forecast.months !== 1)
    rows.push([
      `total, ${forecast.months} months`,
      '',
      '',
      dollars(forecast.total_usd),
      forecast.total_usd === null ? `incomplete; priced lines ${dollars(forecast.priced_total_usd)}` : '',
    ]);
  const widths = [0, 1, 2, 3].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  const lines = rows.map((row) =>
    [row[0]!.padEnd(widths[0]!), row[1]!.padStart(widths[1]!), row[2]!.padStart(widths[2]!), row[3]!.padStart(widths[3]!), row[4]!]
      .join('  ')
      .trimEnd(),
  );
  const source =
    forecast.volumes_from === 'period'
      ? `the period's own traffic scaled to 30 days${forecast.scale !== 1 ? ` × ${forecast.scale}` : ''}`
      : 'the counts given';
  const heading = [
    `Estimate for ${forecast.months} month${forecast.months === 1 ? '' : 's'} at ${source}`,
    `averages of ${averages.from} to ${averages.to} ` +
      `(UTC, ${plural(averages.days, 'day')} measured, ${averages.days_with_usage} with usage; ` +
      `${plural(averages.volumes.events, 'call event')}, ${plural(averages.volumes.dialogs, 'dialog')}, ` +
      `${plural(averages.volumes.runs, 'execution')}), ${forecast.price_sheet.region} prices of ${forecast.price_sheet.date}`,
  ];
  const warnings = forecast.warnings.map((warning) => `warning: ${warning}`);
  const { call_events, dialogs } = forecast.per_million_usd;
  const million = (usd: number | null) => (usd === null ? '-' : `$${usd.toFixed(2)}`);
  const ingest = `per million: call events ${million(call_events)}, dialogs ${million(dialogs)} (the measured averages)`;
  return `${heading.join('\n')}\n\n${lines.join('\n')}\n${ingest}\n${warnings.length > 0 ? `\n${warnings.join('\n')}\n` : ''}`;
}

/** An average's data transfer share in words, when it has one: `, of which data transfer $0.00000002`. */
const transferText = (usd: number | null) => (usd ? `, of which data transfer $${usdText(usd)}` : '');

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

/** Dollars to a millionth of a cent, as the report rounds them. */
const money = (usd: number) => Math.round(usd * 1e8) / 1e8;

/**
 * A dollar figure as written for people, exact to the report's precision (a millionth of a cent) and never in
 * exponent notation: `0.00000066`, `11.50`, `1,234.56`. Parsing it (without the commas) gives the number back.
 */
export function usdText(usd: number): string {
  const [whole, fraction = ''] = Math.abs(usd).toFixed(8).split('.');
  const digits = fraction.replace(/0+$/, '').padEnd(2, '0');
  return `${usd < 0 ? '-' : ''}${whole!.replace(/\B(?=(\d{3})+$)/g, ',')}.${digits}`;
}

/** The two forecasts the HTML report shows: next month at the period's traffic, and at twice that. */
export function reportForecasts(report: CostReport, links: LinkSample[], nowMs = Date.now()): { current: Forecast; double: Forecast } {
  const averages = measureAverages(report, links, { nowMs });
  const at = (scale: number) =>
    forecastCost({
      averages,
      fixed: report.fixed_monthly_usd,
      volumes: periodVolumes(averages, scale),
      months: 1,
      volumesFrom: 'period',
      scale,
    });
  return { current: at(1), double: at(2) };
}

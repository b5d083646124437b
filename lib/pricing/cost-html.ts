import type { CostReport } from './cost-report.ts';
import { usdText, type Forecast } from './cost-forecast.ts';

/**
 * The cost report as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched (its Content
 * Security Policy forbids it). It renders the report and the two forecasts it is given and computes no figure of
 * its own: every dollar and count on it is one of theirs (the chart's axis ticks are the only numbers it makes up).
 * Every text is escaped: subjects, workflow ids and model ids are user data.
 */
export interface CostHtmlInput {
  report: CostReport;
  /** Next month at the period's traffic scaled to 30 days, and at twice that. */
  forecasts: { current: Forecast; double: Forecast };
}

const PALETTE = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
  '#1f77b4',
  '#17becf',
  '#8c564b',
  '#bcbd22',
  '#7f7f7f',
  '#d62728',
];

/** The chart's geometry, in SVG user units. */
const CHART = { width: 960, height: 360, left: 88, right: 16, top: 20, bottom: 64 } as const;

export function costReportHtml({ report, forecasts }: CostHtmlInput): string {
  const title = `Cost ${report.from} to ${report.to}`;
  const fixedLine = forecasts.current.lines.find((line) => line.item === 'fixed monthly')!;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeHtml(title)} <small>(UTC days, both included)</small></h1>
<p class="sheet">Prices: ${escapeHtml(report.price_sheet.region)}, ${escapeHtml(report.price_sheet.date)} (${escapeHtml(
    report.price_sheet.source,
  )})</p>
<section class="cards">
${card('Period total', report.total_usd, 'period', undefined, unpricedWarning(report))}
${card('Fixed monthly cost', fixedLine.monthly_usd, 'fixed-monthly')}
${card('Next month, current traffic', forecasts.current.monthly_usd, 'forecast-current', forecasts.current.priced_total_usd)}
${card('Next month, twice the traffic', forecasts.double.monthly_usd, 'forecast-double', forecasts.double.priced_total_usd)}
</section>
<h2>Daily cost by service</h2>
${dailyChart(report)}
<h2>By service</h2>
${table(
  ['Service', 'Units', 'USD'],
  report.services.map((service) => [text(service.service), number(service.units), usd(service.usd)]),
  [[text('Total'), text(''), usd(report.total_usd, 'period-services')]],
)}
<h2>By project and link</h2>
${
  report.subjects.length === 0
    ? '<p class="empty">No usage in the period.</p>'
    : table(
        ['Kind', 'Subject', 'USD'],
        [...report.subjects]
          .sort((a, b) => b.usd - a.usd)
          .map((subject) => {
            const [kind = '', ...id] = subject.subject.split('#');
            return [text(subject.verify ? `${kind} (admin verify)` : kind), text(id.join('#')), usd(subject.usd)];
          }),
      )
}
${modelsSection(report)}
<h2>Executions</h2>
${table(
  ['', 'Executions', 'Mean USD', 'p95 USD'],
  [[text('All executions'), number(report.per_run.runs), usd(report.per_run.mean_usd), usd(report.per_run.p95_usd)]],
)}
<p>Per million webhook events: ${usd(report.per_million_webhook_events).html}</p>
${workflowsSection(report)}
<h2>Fixed monthly cost</h2>
${table(
  ['Item', 'Count', 'USD a month'],
  report.fixed_monthly_usd.map((fixed) => [text(fixed.item), number(fixed.count), usd(fixed.usd)]),
  [[text('Total'), text(''), usd(fixedLine.monthly_usd, 'fixed-lines')]],
)}
<h2>Forecast for next month</h2>
<p>From the averages of this period (${plural(forecasts.current.averages.days, 'day')}, ${
    number(forecasts.current.averages.days_with_usage).html
  } with usage); the traffic is the period's own scaled to 30 days, and twice that.</p>
${forecastSection('At the current traffic', forecasts.current, 'current')}
${forecastSection('At twice the traffic', forecasts.double, 'double')}
</body>
</html>
`;
}

/** A table cell: its escaped HTML and, for figures, whether it aligns right. */
interface Cell {
  html: string;
  numeric: boolean;
}

const text = (value: string): Cell => ({ html: escapeHtml(value), numeric: false });
const plural = (count: number, noun: string) => `${number(count).html} ${noun}${count === 1 ? '' : 's'}`;
const number = (value: number): Cell => ({ html: escapeHtml(value.toLocaleString('en-US')), numeric: true });

/** A dollar figure, with its exact value in `data-usd` (and `data-total` when it is one of the page's totals). */
function usd(value: number | null, total?: string): Cell {
  const attributes = `${total ? ` data-total="${escapeHtml(total)}"` : ''} data-usd="${value === null ? '' : String(value)}"`;
  return { html: `<span class="usd"${attributes}>${value === null ? '–' : `$${usdText(value)}`}</span>`, numeric: true };
}

function card(label: string, value: number | null, total: string, lowerBound?: number, warning = ''): string {
  const note =
    value === null && lowerBound !== undefined
      ? `<span class="note">incomplete: the priced lines add up to $${escapeHtml(usdText(lowerBound))}</span>`
      : '';
  return `<div class="card"><span class="label">${escapeHtml(label)}</span>${usd(value, total).html}${note}${warning}</div>`;
}

/** Under the period total: the models it leaves out because the price sheet cannot price them (nothing when all are priced). */
function unpricedWarning(report: CostReport): string {
  if (report.unpriced_models.length === 0) return '';
  const models = escapeHtml(report.unpriced_models.join(', '));
  return `<span class="warning" data-warning="unpriced" role="note">leaves out unpriced models: ${models}</span>`;
}

function table(head: string[], rows: Cell[][], foot: Cell[][] = []): string {
  const cells = (row: Cell[], tag: 'td' | 'th') =>
    row.map((cell) => `<${tag}${cell.numeric ? ' class="num"' : ''}>${cell.html}</${tag}>`).join('');
  return `<table>
<thead><tr>${head.map((label) => `<th>${escapeHtml(label)}</th>`).join('')}</tr></thead>
<tbody>
${rows.map((row) => `<tr>${cells(row, 'td')}</tr>`).join('\n')}
</tbody>${foot.length > 0 ? `\n<tfoot>${foot.map((row) => `<tr>${cells(row, 'th')}</tr>`).join('')}</tfoot>` : ''}
</table>`;
}

function modelsSection(report: CostReport): string {
  const models = report.models;
  if (models.length === 0) return '';
  return `<h2>By model (Bedrock)</h2>
${table(
  ['Model', 'Input tokens', 'Output tokens', 'Cache read', 'Cache write', 'Images', 'USD', 'Price source'],
  models.map((model) => [
    text(model.model),
    number(model.input_tokens),
    number(model.output_tokens),
    number(model.cache_read_tokens),
    number(model.cache_write_tokens),
    number(model.images),
    model.priced ? usd(model.usd) : { html: '<span class="unpriced">unpriced</span>', numeric: true },
    text(model.source ?? ''),
  ]),
)}`;
}

function workflowsSection(report: CostReport, top = 10): string {
  if (report.workflows.length === 0) return '<p class="empty">No execution finished in the period.</p>';
  const rows = (workflows: CostReport['workflows']) =>
    workflows
      .slice(0, top)
      .map((workflow) => [
        text(workflow.project),
        text(workflow.workflow_id),
        number(workflow.runs),
        usd(workflow.mean_usd),
        usd(workflow.p95_usd),
      ]);
  const head = ['Project', 'Workflow', 'Executions', 'Mean USD', 'p95 USD'];
  return `<h3>Most expensive workflows by mean execution cost</h3>
${table(head, rows([...report.workflows].sort((a, b) => b.mean_usd - a.mean_usd)))}
<h3>Most expensive workflows by p95 execution cost</h3>
${table(head, rows([...report.workflows].sort((a, b) => b.p95_usd - a.p95_usd)))}`;
}

function forecastSection(heading: string, forecast: Forecast, name: string): string {
  const rows = forecast.lines.map((line) => [
    text(line.item),
    number(line.count),
    usd(line.usd_each),
    usd(line.monthly_usd),
    text(line.usd_each === null ? `no samples: ${line.reason ?? ''}` : line.samples),
  ]);
  const warnings =
    forecast.warnings.length > 0
      ? `<ul class="warnings">${forecast.warnings.map((warning) => `<li>${escapeHtml(warning)}</li>`).join('')}</ul>`
      : '';
  return `<h3>${escapeHtml(heading)}</h3>
${table(['', 'Count a month', 'USD each', 'USD a month', 'Average from'], rows, [
  [text('Total a month'), text(''), text(''), usd(forecast.monthly_usd, `forecast-${name}-lines`), text('')],
])}
${warnings}`;
}

/**
 * The daily cost stacked by service: one `<g class="bar">` per day of the period, and in it one `<rect>` per service
 * that cost anything that day (bottom up in the report's service order). A segment is at least 1 unit tall, so that
 * a cent beside dollars still shows; its exact figure is its tooltip and `data-usd`. The legend (HTML under the
 * chart) names the services that appear.
 */
function dailyChart(report: CostReport): string {
  const { width, height, left, right, top, bottom } = CHART;
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  const baseline = top + plotHeight;
  const colorOf = new Map(report.services.map((service, index) => [service.service, PALETTE[index % PALETTE.length]!]));
  const ticks = yTicks(Math.max(0, ...report.days.map((day) => day.total_usd)));
  const yMax = ticks.at(-1)!;
  const slot = plotWidth / Math.max(1, report.days.length);
  const barWidth = Math.min(48, Math.max(1, slot * 0.7));
  const labelEvery = Math.ceil(report.days.length / 15);
  const bars = report.days.map((day, index) => {
    const x = left + index * slot + (slot - barWidth) / 2;
    let y = baseline;
    const segments = report.services
      .filter((service) => (day.usd_by_service[service.service] ?? 0) > 0)
      .map((service) => {
        const value = day.usd_by_service[service.service]!;
        const segmentHeight = Math.max(1, (value / yMax) * plotHeight);
        y -= segmentHeight;
        return (
          `<rect x="${fixed(x)}" y="${fixed(y)}" width="${fixed(barWidth)}" height="${fixed(segmentHeight)}" ` +
          `fill="${colorOf.get(service.service)!}" data-day="${escapeHtml(day.day)}" data-service="${escapeHtml(service.service)}" ` +
          `data-usd="${value}"><title>${escapeHtml(`${day.day} ${service.service}: $${usdText(value)}`)}</title></rect>`
        );
      });
    const label =
      index % labelEvery === 0
        ? `<text class="x" x="${fixed(left + index * slot + slot / 2)}" y="${baseline + 16}" text-anchor="middle">` +
          `${escapeHtml(day.day.slice(5))}</text>`
        : '';
    const title = escapeHtml(`${day.day}: $${usdText(day.total_usd)}`);
    const open = `<g class="bar" data-day="${escapeHtml(day.day)}" data-usd="${day.total_usd}">`;
    return `${open}<title>${title}</title>${segments.join('')}${label}</g>`;
  });
  const grid = ticks.map((tick) => {
    const y = baseline - (tick / yMax) * plotHeight;
    return (
      `<line class="grid" x1="${left}" x2="${width - right}" y1="${fixed(y)}" y2="${fixed(y)}"/>` +
      `<text class="y" x="${left - 6}" y="${fixed(y + 4)}" text-anchor="end">$${escapeHtml(usdText(tick))}</text>`
    );
  });
  const legend = report.services
    .filter((service) => service.usd > 0)
    .map(
      (service) =>
        `<li><span class="swatch" style="background:${colorOf.get(service.service)!}"></span>${escapeHtml(service.service)}</li>`,
    );
  const period = `${escapeHtml(report.from)} to ${escapeHtml(report.to)}`;
  const size = `viewBox="0 0 ${width} ${height}" width="${width}" height="${height}"`;
  return `<figure>
<svg xmlns="http://www.w3.org/2000/svg" ${size} role="img" aria-label="Daily cost by service, ${period}">
${grid.join('\n')}
<line class="axis" x1="${left}" x2="${width - right}" y1="${baseline}" y2="${baseline}"/>
<line class="axis" x1="${left}" x2="${left}" y1="${top}" y2="${baseline}"/>
${bars.join('\n')}
<text class="title" x="${left + plotWidth / 2}" y="${height - 12}" text-anchor="middle">Day (UTC, ${period})</text>
<text class="title" transform="translate(16 ${top + plotHeight / 2}) rotate(-90)" text-anchor="middle">USD per day</text>
</svg>
${legend.length > 0 ? `<ul class="legend">${legend.join('')}</ul>` : '<p class="empty">No usage in the period.</p>'}
</figure>`;
}

/** Round tick values from 0 to at least `max` (1, 2 or 5 × a power of ten apart); [0, 1] for an empty period. */
function yTicks(max: number): number[] {
  if (max <= 0) return [0, 1];
  const raw = max / 4;
  const power = 10 ** Math.floor(Math.log10(raw));
  // Never finer than the report's precision (a millionth of a cent), which the labels show.
  const step = Math.max(1e-8, [1, 2, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= raw)!);
  const count = Math.ceil(max / step - 1e-9);
  return Array.from({ length: count + 1 }, (_, index) => Number((index * step).toPrecision(12)));
}

const fixed = (value: number) => Number(value.toFixed(2)).toString();

/** Text for HTML content and attribute values (double- or single-quoted). */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** Ids (models, subjects, workflows) are user data of any length without a break: they wrap anywhere rather than widen the page. */
const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d232a; margin: 24px auto; max-width: 1000px;
  padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h1 small { font-size: 13px; color: #68707a; font-weight: normal; }
h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #d8dde3; padding-bottom: 4px; } h3 { font-size: 15px; }
.sheet, .empty, .note { color: #68707a; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0; }
.card { border: 1px solid #d8dde3; border-radius: 6px; padding: 10px 14px; min-width: 200px; display: flex; flex-direction: column; }
.card .label { color: #68707a; font-size: 12px; } .card .usd { font-size: 20px; font-weight: 600; } .card .note { font-size: 12px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eceff2; text-align: left; vertical-align: top; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; } tfoot th { border-top: 1px solid #9aa3ad; }
figure { margin: 0; } svg { max-width: 100%; height: auto; font-size: 12px; }
svg .axis { stroke: #1d232a; } svg .grid { stroke: #eceff2; } svg text { fill: #3b434c; } svg .title { font-size: 13px; }
.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 6px 16px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 6px; vertical-align: -1px; border-radius: 2px; }
.unpriced { color: #b3261e; } .warnings { color: #b3261e; }
.card .warning { color: #b3261e; font-size: 12px; font-weight: 600; max-width: 260px; }
td:not(.num), .card .warning, .sheet, .warnings { overflow-wrap: anywhere; }
`;

import { describe, expect, it } from 'vitest';
import { forecastCost, measureAverages, reportForecasts, usdText, type LinkSample } from '#lib/pricing/cost-forecast.ts';
import { costReportHtml, escapeHtml } from '#lib/pricing/cost-html.ts';
import { costReport, type CostReport } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';

const sheet = loadPriceSheet();
const HOSTILE_PROJECT = '<script>alert(1)</script>';
const HOSTILE_WORKFLOW = '"><img src=x onerror=alert(2)>';
const HOSTILE_LINK = "lnk_'&<b>";

const MODELS: CostReport['models'] = [
  {
    model: 'amazon.nova-lite-v1:0',
    input_tokens: 1200,
    output_tokens: 300,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    images: 0,
    usd: 0.000144,
    priced: true,
    source: 'https://aws.amazon.com/bedrock/pricing/',
  },
  {
    model: 'vendor.<unknown>-model',
    input_tokens: 10,
    output_tokens: 5,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    images: 0,
    usd: null,
    priced: false,
    source: null,
  },
];

function build(models: CostReport['models'] = MODELS): CostReport {
  return {
    ...costReport({
      from: '2026-11-01',
      to: '2026-11-05',
      sheet,
      usage: [
        {
          subject: `project#${HOSTILE_PROJECT}`,
          day: '2026-11-02',
          units: { stateTransitions: 40, apiRequests: 10, dynamoWriteUnits: 30, lambdaInvocations: 12 },
        },
        { subject: `link#${HOSTILE_LINK}`, day: '2026-11-02', units: { apiRequests: 100, webhookEvents: 100, dynamoWriteUnits: 400 } },
        { subject: `link#${HOSTILE_LINK}`, day: '2026-11-04', units: { apiRequests: 5, webhookEvents: 5 } },
      ],
      executionCosts: [
        ...Array.from({ length: 3 }, () => ({ project: HOSTILE_PROJECT, workflow_id: HOSTILE_WORKFLOW, units: { stateTransitions: 8 } })),
        ...Array.from({ length: 7 }, (_, i) => ({ project: HOSTILE_PROJECT, workflow_id: 'echo', units: { stateTransitions: 2 + i } })),
      ],
    }),
    models,
    unpriced_models: models.filter((model) => model.usd === null).map((model) => model.model),
  };
}

function page(report: CostReport, links: LinkSample[] = [{ subject: `link#${HOSTILE_LINK}`, type: 'calls', events: 105 }]) {
  const forecasts = reportForecasts(report, links);
  return { html: costReportHtml({ report, forecasts }), forecasts };
}

/** The `data-usd` of the element marked `data-total="name"`, and the dollars it shows. */
function total(html: string, name: string): { usd: string; shown: string } {
  const match = new RegExp(`<span class="usd" data-total="${name}" data-usd="([^"]*)">([^<]*)</span>`).exec(html);
  if (!match) throw new Error(`no data-total="${name}"`);
  return { usd: match[1]!, shown: match[2]! };
}

describe('the HTML cost report', () => {
  const report = build();
  const { html, forecasts } = page(report);

  it('escapes every text that comes from data: subjects, workflow ids, model ids', () => {
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>');
    expect(html).toContain(escapeHtml(HOSTILE_PROJECT));
    expect(html).toContain(escapeHtml(HOSTILE_WORKFLOW));
    expect(html).toContain(escapeHtml(HOSTILE_LINK));
    expect(html).toContain('vendor.&#60;unknown&#62;-model');
    expect(escapeHtml(`<a href="x" title='y'>&`)).toBe('&#60;a href=&#34;x&#34; title=&#39;y&#39;&#62;&#38;');
  });

  it('loads nothing: no script, no source or link to fetch, and a policy that forbids it', () => {
    // Inside tags only: the escaped workflow id says `src=x` as text.
    expect(html).not.toMatch(/<[^>]*\s(src|href)=/i);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);
  });

  it('draws one bar per day and one segment per service that cost anything that day', () => {
    const svg = /<svg[\s\S]*<\/svg>/.exec(html)![0];
    const bars = [...svg.matchAll(/<g class="bar" data-day="([^"]+)"/g)].map((match) => match[1]);
    expect(bars).toEqual(report.days.map((day) => day.day));
    const segments = [...svg.matchAll(/<rect [^>]*data-day="([^"]+)" data-service="([^"]+)" data-usd="([^"]+)"/g)].map(
      (match) => `${match[1]} ${match[2]} ${match[3]}`,
    );
    const nonzero = report.days.flatMap((day) =>
      Object.entries(day.usd_by_service)
        .filter(([, usd]) => usd > 0)
        .map(([service, usd]) => `${day.day} ${service} ${usd}`),
    );
    expect(nonzero.length).toBeGreaterThan(3);
    expect(segments.sort()).toEqual(nonzero.sort());
    // Every rect is a segment: the legend is HTML beside the SVG.
    expect(svg.match(/<rect /g)!.length).toBe(nonzero.length);
    for (const height of svg.matchAll(/<rect [^>]*height="([^"]+)"/g)) expect(Number(height[1])).toBeGreaterThanOrEqual(1);
    expect(svg).toContain('USD per day');
    expect(svg).toContain('>11-02</text>');
  });

  it('names each service that appears in the legend', () => {
    const legend = /<ul class="legend">([\s\S]*?)<\/ul>/.exec(html)![1]!;
    expect([...legend.matchAll(/<\/span>([^<]+)<\/li>/g)].map((match) => match[1])).toEqual(
      report.services.filter((service) => service.usd > 0).map((service) => service.service),
    );
  });

  it('shows the totals of the report and the forecasts, exactly as their objects have them', () => {
    expect(total(html, 'period')).toEqual({ usd: String(report.total_usd), shown: `$${usdText(report.total_usd)}` });
    const fixed = forecasts.current.lines.find((line) => line.item === 'fixed monthly')!.monthly_usd!;
    expect(total(html, 'fixed-monthly')).toEqual({ usd: String(fixed), shown: `$${usdText(fixed)}` });
    expect(total(html, 'forecast-current')).toEqual({
      usd: String(forecasts.current.monthly_usd),
      shown: `$${usdText(forecasts.current.monthly_usd!)}`,
    });
    expect(total(html, 'forecast-double')).toEqual({
      usd: String(forecasts.double.monthly_usd),
      shown: `$${usdText(forecasts.double.monthly_usd!)}`,
    });
    expect(forecasts.double.monthly_usd).toBeGreaterThan(forecasts.current.monthly_usd!);
  });

  it('lists subjects largest first, the workflows by mean and by p95, models, and the fixed items', () => {
    const subjects = [...html.matchAll(/<tr><td>(project|link)<\/td><td>([^<]*)<\/td>/g)].map((match) => match[1]);
    expect(subjects).toEqual(report.subjects.map((subject) => subject.subject.split('#')[0]));
    expect(html).toContain('Most expensive workflows by mean execution cost');
    expect(html).toContain('Most expensive workflows by p95 execution cost');
    expect(html).toContain('By model (Bedrock)');
    expect(html).toContain('<span class="unpriced">unpriced</span>');
    for (const fixed of report.fixed_monthly_usd) expect(html).toContain(`<td>${escapeHtml(fixed.item)}</td>`);
  });

  it('warns beside the period total that it leaves out the unpriced models, naming them (escaped)', () => {
    expect(report.unpriced_models).toEqual(['vendor.<unknown>-model']);
    const card = /<div class="card"><span class="label">Period total<\/span>([\s\S]*?)<\/div>/.exec(html)![1]!;
    expect(card).toContain(`data-total="period"`);
    expect(card).toContain(
      '<span class="warning" data-warning="unpriced" role="note">leaves out unpriced models: vendor.&#60;unknown&#62;-model</span>',
    );
    expect(html.match(/data-warning=/g)).toHaveLength(1);
    // Visible: styled as a warning, not hidden.
    expect(html).toMatch(/\.card \.warning \{ color: #b3261e;/);
  });

  it('has no unpriced warning when every model is priced', () => {
    const { html: priced } = page(build(MODELS.filter((model) => model.priced)));
    expect(priced).not.toContain('data-warning');
    expect(page(build([])).html).not.toContain('data-warning');
  });

  it('leaves the model table out when no model was used', () => {
    expect(page(build([])).html).not.toContain('By model');
  });

  it('shows a forecast it cannot complete as incomplete, with the priced lines and the reason', () => {
    // Dialogs asked for, and the period had no dialogs link to average them on.
    const averages = measureAverages(report, [{ subject: `link#${HOSTILE_LINK}`, type: 'calls', events: 105 }]);
    const at = (dialogs: number) =>
      forecastCost({
        averages,
        fixed: report.fixed_monthly_usd,
        volumes: { events: 10, dialogs, runs: 1 },
        months: 1,
        volumesFrom: 'flags',
      });
    const forecasts = { current: at(100), double: at(200) };
    const partial = costReportHtml({ report, forecasts });
    expect(forecasts.current.monthly_usd).toBeNull();
    expect(total(partial, 'forecast-current')).toEqual({ usd: '', shown: '–' });
    expect(partial).toContain(`incomplete: the priced lines add up to $${usdText(forecasts.current.priced_total_usd)}`);
    expect(partial).toContain(`no samples: ${escapeHtml(averages.dialog.reason!)}`);
    expect(partial).toContain('<ul class="warnings"><li>dialogs: 100 a month asked for');
  });
});

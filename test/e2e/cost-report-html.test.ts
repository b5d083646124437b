import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import { usdText, type Forecast } from '#lib/pricing/cost-forecast.ts';
import { sumUnits, type CostReport } from '#lib/pricing/cost-report.ts';
import { createUsageMeter } from '#shared/metering/usage-meter.ts';
import { callEvent, textEvent } from '../support/events.ts';
import { chromiumTestRuns, launchChromium } from '../support/chromium.ts';
import { postJson } from '../support/http.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { createKey, publishedClient, publishFixtures } from '../support/published.ts';

/**
 * `cost report --html` in a real browser: headless Chromium (Debian's package, driven by puppeteer-core, which
 * downloads nothing) loads the page from a file:// URL with the network off, and the test checks that the chart is
 * drawn (one rendered rect per day and service that cost anything) and that the totals on the page are the JSON's.
 */

const CHROMIUM_RUNS = chromiumTestRuns('test/e2e/cost-report-html.test.ts');

const PROJECT = 'html';
/** A model id no price sheet names, long and without a break: the page must wrap it, not widen. */
const LONG_MODEL_ID = `acme.${'x'.repeat(200)}-v1:0`;
const VIEWPORT_WIDTH = 1200;
const CALLS = 6;
const DIALOGS = 2;
const RUNS = 2;

let twin: TestTwin | undefined;
let browser: Browser | undefined;
let userDataDir: string | undefined;
let page: Page;
let report: CostReport;
let estimate: Forecast;
let doubled: Forecast;
let htmlFile: string;
let screenshot: string;
const requested: string[] = [];

async function admin<T>(...argv: string[]): Promise<T> {
  const result = await runCli([...argv, '--json']);
  expect(result.exitCode, result.stdout + result.stderr).toBe(0);
  return JSON.parse(result.stdout) as T;
}

describe.skipIf(!CHROMIUM_RUNS)('cost report --html in Chromium', () => {
  beforeAll(async () => {
    const from = new Date().toISOString().slice(0, 10);
    twin = await startTestTwin();
    await publishFixtures(twin, PROJECT);
    const client = publishedClient(twin, (await createKey(twin, 'full', { project: PROJECT })).key);
    const calls = await boundLink(twin, 'calls');
    const dialogs = await boundLink(twin, 'dialogs');
    for (let i = 0; i < CALLS; i++)
      expect((await postJson(`${twin.webhookUrl}/api/v1/webhooks/${calls.token}/events`, callEvent())).status).toBe(201);
    for (let i = 0; i < DIALOGS; i++)
      expect((await postJson(`${twin.webhookUrl}/api/v1/webhooks/${dialogs.token}/events`, textEvent())).status).toBe(201);
    for (let i = 0; i < RUNS; i++)
      expect((await client.execute('echo', { user_id: `u${i}`, input: { message: 'hi' } })).body.status).toBe('completed');
    await twin.settled();
    // As the usage meter writes any model's counters: an unpriced model, shown in the models table and the warning.
    const noUnits = sumUnits([]);
    await createUsageMeter(twin.dynamo, twin.twin.tables.usage).add(`project#${PROJECT}`, noUnits, Date.now(), {
      [LONG_MODEL_ID]: { input_tokens: 1000 },
    });
    // The same period for every command (a test that crosses midnight UTC still asks for one).
    const period = ['--from', from, '--to', new Date().toISOString().slice(0, 10)];
    report = await admin<CostReport>('cost', 'report', ...period);
    estimate = await admin<Forecast>('cost', 'estimate', ...period);
    const { events, dialogs: dialogCount, runs } = estimate.volumes;
    doubled = await admin<Forecast>(
      'cost',
      'estimate',
      ...period,
      '--events',
      String(2 * events),
      '--dialogs',
      String(2 * dialogCount),
      '--runs',
      String(2 * runs),
    );
    userDataDir = mkdtempSync(join(tmpdir(), 'cost-html-'));
    htmlFile = join(userDataDir, 'cost-report.html');
    const written = await admin<{ html: string; total_usd: number }>('cost', 'report', ...period, '--html', htmlFile);
    expect(written).toMatchObject({ html: htmlFile, total_usd: report.total_usd });

    browser = await launchChromium(join(userDataDir, 'profile'));
    page = await browser.newPage();
    await page.setOfflineMode(true);
    page.on('request', (request) => requested.push(request.url()));
    await page.setViewport({ width: VIEWPORT_WIDTH, height: 900 });
    await page.goto(pathToFileURL(htmlFile).href, { waitUntil: 'load' });
    screenshot = join(tmpdir(), `cost-report-${process.pid}.png`);
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(`cost report screenshot: ${screenshot} (page: ${htmlFile})`);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await twin?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  it('had usage of every kind to show', () => {
    expect(report.per_run.runs).toBe(RUNS);
    expect(estimate.averages.call_event.events).toBe(CALLS);
    expect(estimate.averages.dialog.events).toBe(DIALOGS);
    expect(estimate.total_usd).not.toBeNull();
  });

  it('loads nothing but the file itself', () => {
    expect(requested).toEqual([pathToFileURL(htmlFile).href]);
  });

  it('draws a rendered segment for every day and service that cost anything', async () => {
    const expected = report.days.flatMap((day) =>
      Object.entries(day.usd_by_service)
        .filter(([, usd]) => usd > 0)
        .map(([service, usd]) => ({ day: day.day, service, usd })),
    );
    expect(expected.length).toBeGreaterThan(3);
    const drawn = await page.$$eval('svg rect', (rects) =>
      rects.map((rect) => {
        const box = rect.getBoundingClientRect();
        return {
          day: rect.dataset.day,
          service: rect.dataset.service,
          usd: Number(rect.dataset.usd),
          width: box.width,
          height: box.height,
        };
      }),
    );
    expect(drawn.length).toBe(expected.length);
    expect(drawn.map(({ day, service, usd }) => ({ day, service, usd }))).toEqual(expect.arrayContaining(expected));
    for (const segment of drawn) {
      expect(segment.width, `${segment.day} ${segment.service}`).toBeGreaterThan(0);
      expect(segment.height, `${segment.day} ${segment.service}`).toBeGreaterThan(0);
    }
    expect(await page.$$eval('svg g.bar', (bars) => bars.length)).toBe(report.days.length);
  });

  it("shows the JSON report's totals and the estimate's forecasts", async () => {
    const shown = (name: string) =>
      page.$eval(`[data-total="${name}"]`, (element) => ({ text: element.textContent, usd: element.getAttribute('data-usd') }));
    const dollars = async (name: string) => {
      const { text, usd } = await shown(name);
      expect(Number(usd), name).toBe(Number(text!.replace(/[$,]/g, '')));
      return Number(usd);
    };
    expect(await dollars('period')).toBe(report.total_usd);
    expect(await dollars('period-services')).toBe(report.total_usd);
    const fixed = estimate.lines.find((line) => line.item === 'fixed monthly')!.monthly_usd;
    expect(await dollars('fixed-monthly')).toBe(fixed);
    expect(await dollars('forecast-current')).toBe(estimate.monthly_usd);
    expect(await dollars('forecast-double')).toBe(doubled.monthly_usd);
    expect(doubled.monthly_usd).toBeGreaterThan(estimate.monthly_usd!);
  });

  it('lists every subject and the fixed items', async () => {
    const subjects = await page.$$eval('table tbody tr', (rows) => rows.map((row) => [...row.cells].map((cell) => cell.textContent)));
    for (const subject of report.subjects) {
      const [kind, id] = subject.subject.split('#');
      expect(subjects).toContainEqual([kind, id, `$${usdText(subject.usd)}`]);
    }
    for (const fixed of report.fixed_monthly_usd) expect(subjects.some((row) => row[0] === fixed.item)).toBe(true);
  });

  it(`keeps a long unbroken model id within the ${VIEWPORT_WIDTH} px viewport and its warning inside its card`, async () => {
    expect(report.unpriced_models).toEqual([LONG_MODEL_ID]);
    expect(await page.$eval('html', (root) => root.scrollWidth)).toBeLessThanOrEqual(VIEWPORT_WIDTH);
    const { card, warning } = await page.$eval('[data-warning="unpriced"]', (element) => {
      // The text's own extent: a line that does not wrap overflows its element's box without widening it.
      const text = element.ownerDocument.createRange();
      text.selectNodeContents(element);
      const [outer, inner] = [element.closest('.card')!.getBoundingClientRect(), text.getBoundingClientRect()];
      return {
        card: { left: outer.left, right: outer.right, bottom: outer.bottom },
        warning: { left: inner.left, right: inner.right, bottom: inner.bottom },
      };
    });
    expect(warning.left).toBeGreaterThanOrEqual(card.left);
    expect(warning.right).toBeLessThanOrEqual(card.right);
    expect(warning.bottom).toBeLessThanOrEqual(card.bottom);
    const modelCell = await page.$$eval(
      'table td',
      (cells, id) => cells.filter((cell) => cell.textContent === id).map((cell) => cell.getBoundingClientRect().right),
      LONG_MODEL_ID,
    );
    expect(modelCell).toHaveLength(1);
    expect(modelCell[0]).toBeLessThanOrEqual(VIEWPORT_WIDTH);
  });
});

import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import type { Forecast } from '#lib/pricing/cost-forecast.ts';
import type { CostReport } from '#lib/pricing/cost-report.ts';
import { callEvent } from '../support/events.ts';
import { postJson } from '../support/http.ts';
import { boundLink, refusedAdmin, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { createKey, publishedClient, publishFixtures } from '../support/published.ts';

/**
 * `cost estimate` on the twin: 4 call events on a calls link, 2 runs of `echo` and 1 of `memory`; no dialogs link, so
 * the dialog average has no samples.
 */
const PROJECT = 'estimated';
let twin: TestTwin;
let period: string[];
let report: CostReport;

async function estimate(...argv: string[]): Promise<{ forecast: Forecast; stderr: string }> {
  const result = await runCli(['cost', 'estimate', ...period, ...argv, '--json']);
  expect(result.exitCode, result.stdout + result.stderr).toBe(0);
  return { forecast: JSON.parse(result.stdout) as Forecast, stderr: result.stderr };
}

beforeAll(async () => {
  const from = new Date().toISOString().slice(0, 10);
  twin = await startTestTwin();
  await publishFixtures(twin, PROJECT);
  const client = publishedClient(twin, (await createKey(twin, 'full', { project: PROJECT })).key);
  const link = await boundLink(twin, 'calls');
  for (let i = 0; i < 4; i++)
    expect((await postJson(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`, callEvent())).status).toBe(201);
  for (const workflow of ['echo', 'echo', 'memory'])
    expect((await client.execute(workflow, { user_id: 'u', input: { message: 'hi' } })).body.status).toBe('completed');
  await twin.settled();
  period = ['--from', from, '--to', new Date().toISOString().slice(0, 10)];
  report = (await twin.admin('cost', 'report', ...period)) as CostReport;
}, 120_000);
afterAll(() => twin?.close());

describe('cost estimate', () => {
  it("projects the counts asked for with the period's averages, and says what they rest on", async () => {
    const { forecast, stderr } = await estimate('--events', '100000', '--runs', '2000', '--months', '3');
    expect(stderr).toBe('');
    expect(forecast).toMatchObject({ months: 3, volumes_from: 'flags', volumes: { events: 100000, dialogs: 0, runs: 2000 }, warnings: [] });
    expect(forecast.averages).toMatchObject({ days_with_usage: 1, volumes: { events: 4, dialogs: 0, runs: 3 } });
    // The period is today: it has measured today's elapsed part only.
    expect(forecast.averages.days).toBeGreaterThan(0);
    expect(forecast.averages.days).toBeLessThanOrEqual(1);
    expect(forecast.averages.call_event).toMatchObject({ events: 4, links: 1, reason: null });
    const link = report.subjects.find((subject) => subject.subject.startsWith('link#'))!;
    expect(forecast.averages.call_event.usd!).toBeCloseTo(link.usd / 4, 8);
    // Per run: the records' step cost, and the project's other dollars shared by its runs.
    const project = report.subjects.find((subject) => subject.subject === `project#${PROJECT}`)!;
    const steps = report.workflows.reduce((sum, workflow) => sum + workflow.mean_usd * workflow.runs, 0);
    expect(forecast.averages.run).toMatchObject({ runs: 3, workflow: null, project: null });
    expect(forecast.averages.run.step_usd!).toBeCloseTo(steps / 3, 8);
    expect(forecast.averages.run.usd!).toBeCloseTo(project.usd / 3, 7);
    const fixed = report.fixed_monthly_usd.reduce((sum, item) => sum + item.usd, 0);
    // X-Ray: under one request a second, every one is a trace: the events, and two per execution, at $5 per million.
    const traces = (100000 + 2 * 2000) * 0.000005;
    expect(forecast.lines.find((line) => line.item === 'X-Ray traces')).toMatchObject({ count: 104000, usd_each: 0.000005 });
    expect(forecast.total_usd!).toBeCloseTo(
      3 * (100000 * forecast.averages.call_event.usd! + 2000 * forecast.averages.run.usd! + fixed + traces),
      4,
    );
  });

  it("without counts, is next month at the period's own traffic scaled to 30 days", async () => {
    const { forecast } = await estimate();
    const perMonth = (count: number) => Math.round((count * 30) / forecast.averages.days);
    expect(forecast).toMatchObject({ months: 1, volumes_from: 'period', volumes: { events: perMonth(4), dialogs: 0, runs: perMonth(3) } });
    expect(forecast.total_usd).toBe(forecast.monthly_usd);
  });

  it('narrows the execution average to a workflow, and has none for a workflow without runs', async () => {
    const echo = (await estimate('--runs', '10', '--workflow', 'echo')).forecast.averages.run;
    expect(echo).toMatchObject({ runs: 2, workflow: 'echo' });
    expect((await estimate('--runs', '10', '--workflow', 'memory', '--project', PROJECT)).forecast.averages.run).toMatchObject({
      runs: 1,
      project: PROJECT,
    });
    const { forecast, stderr } = await estimate('--runs', '10', '--events', '10', '--workflow', 'router');
    expect(forecast.averages.run).toMatchObject({
      usd: null,
      runs: 0,
      reason: expect.stringMatching(/^no execution of workflow router finished from /) as string,
    });
    expect(forecast.lines.find((line) => line.item === 'runs')).toMatchObject({ count: 10, monthly_usd: null });
    expect(forecast.total_usd).toBeNull();
    expect(forecast.priced_total_usd).toBeGreaterThan(0);
    expect(stderr).toMatch(/^warning: runs: 10 a month asked for, but no execution of workflow router finished/m);
  });

  it('does not guess a dialog without samples, and prices the other lines', async () => {
    const result = await runCli(['cost', 'estimate', ...period, '--events', '1000', '--dialogs', '50'], {
      stdin: () => Promise.resolve(''),
      terminal: true,
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^dialogs +50 +- +- +no samples: no dialogs link was billed from /m);
    expect(result.stdout).toMatch(/^total a month +- +incomplete; the priced lines add up to \d+\.\d+$/m);
    expect(result.stdout).toContain('warning: dialogs: 50 a month asked for');
  });

  it('writes the page into a folder that exists, and makes none that does not', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'cost-html-'));
    const result = await runCli(['cost', 'report', ...period, '--html', join(folder, 'cost.html'), '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ html: join(folder, 'cost.html') });
    expect(readFileSync(join(folder, 'cost.html'), 'utf8')).toMatch(/^<!doctype html>/i);
    const missing = await runCli(['cost', 'report', ...period, '--html', join(folder, 'reports', 'november', 'cost.html'), '--json']);
    expect(missing.exitCode).toBe(2);
    expect(JSON.parse(missing.stdout).error).toMatch(/^--html: the directory \S+ does not exist;/);
    expect(existsSync(join(folder, 'reports'))).toBe(false);
  });

  it('refuses bad flags as usage mistakes', async () => {
    for (const argv of [
      ['--events', '-1'],
      ['--events', '1.5'],
      ['--runs', 'many'],
      ['--months', '0'],
      ['--months', '37'],
      ['--workflow', 'no such/id'],
      ['--project', 'a b'],
      ['--link', 'lnk_x'],
      ['--from', '2026-02-30'],
    ]) {
      const { exitCode, error } = await refusedAdmin('cost', 'estimate', ...argv);
      expect(exitCode, `${argv.join(' ')}: ${error}`).toBe(2);
    }
    expect((await refusedAdmin('cost', 'estimate', '--months', '37')).error).toBe('--months must be a whole number from 1 to 36; got "37"');
    expect((await refusedAdmin('cost', 'report', '--events', '5')).error).toBe('--events is a flag of cost estimate, not cost report');
    expect((await refusedAdmin('cost', 'report', '--html', 'x.html', '--csv')).exitCode).toBe(2);
    expect(await refusedAdmin('cost', 'report', '--html', 'x.html', '--project', PROJECT)).toEqual({
      exitCode: 2,
      error: '--html reports the whole deployment; narrow with --project or --link in the table, --json or --csv report',
    });
    const folder = mkdtempSync(join(tmpdir(), 'cost-html-'));
    expect(await refusedAdmin('cost', 'report', '--html', folder)).toEqual({
      exitCode: 2,
      error: `--html: ${folder} is a directory; name a file in it, e.g. ${join(folder, 'cost.html')}`,
    });
    expect((await runCli(['--help'])).stdout).toContain('cost estimate [--events N]');
  });
});

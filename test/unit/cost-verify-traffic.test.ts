import { describe, expect, it } from 'vitest';
import { costReport, costReportTable, VERIFY_PROJECT_PREFIX } from '#lib/pricing/cost-report.ts';
import { measureAverages } from '#lib/pricing/cost-forecast.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';

/**
 * `admin verify`'s own traffic, in a temporary project named VERIFY_PROJECT_PREFIX…: marked in the report and in its
 * totals (the bill has it), but in no per-run figure, workflow, average or warning of the deployment's workload.
 */
describe("admin verify's traffic in a cost report", () => {
  const sheet = loadPriceSheet();
  const TRANSITION = sheet.units.stateTransitions.usd_per_unit;
  const verifyProject = `${VERIFY_PROJECT_PREFIX}1a2b3c4d`;
  const report = costReport({
    from: '2026-11-01',
    to: '2026-11-02',
    sheet,
    usage: [
      { subject: 'project#shop', day: '2026-11-01', units: { stateTransitions: 40 } },
      { subject: `project#${verifyProject}`, day: '2026-11-02', units: { stateTransitions: 400 } },
    ],
    executionCosts: [
      { project: 'shop', workflow_id: 'support', units: { stateTransitions: 4 } },
      { project: verifyProject, workflow_id: 'admin-verify-step-model-1', units: { stateTransitions: 100 } },
    ],
  });

  it('is marked, counted in the totals and apart in verify_usd', () => {
    expect(report.subjects).toEqual([
      { subject: `project#${verifyProject}`, usd: expect.closeTo(400 * TRANSITION, 10), verify: true },
      { subject: 'project#shop', usd: expect.closeTo(40 * TRANSITION, 10) },
    ]);
    expect(report.total_usd).toBeCloseTo(440 * TRANSITION, 10);
    expect(report.verify_usd).toBeCloseTo(400 * TRANSITION, 10);
    expect(costReportTable(report)).toContain(`project#${verifyProject} (admin verify)`);
  });

  it('is in no per-run figure, workflow or average', () => {
    expect(report.per_run).toMatchObject({ runs: 1, mean_usd: expect.closeTo(4 * TRANSITION, 10) });
    expect(report.workflows.map((workflow) => workflow.project)).toEqual(['shop']);
    const averages = measureAverages(report, [], { nowMs: Date.parse('2026-12-01T00:00:00Z') });
    expect(averages.run.runs).toBe(1);
    expect(averages.projects_without_runs).toEqual([]);
  });
});

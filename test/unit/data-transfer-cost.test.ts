import { describe, expect, it } from 'vitest';
import { forecastCost, measureAverages, type LinkSample } from '#lib/pricing/cost-forecast.ts';
import { costReport, costReportCsv, costReportTable } from '#lib/pricing/cost-report.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';

/** Data transfer out on the bill: priced per GB from the sheet, a line of the report, a share of each estimate average. */
const sheet = loadPriceSheet();
const GB = 2 ** 30;
const REQUEST = sheet.units.apiRequests.usd_per_unit;
const TRANSITION = sheet.units.stateTransitions.usd_per_unit;

describe("the price sheet's data transfer out", () => {
  it("is $0.09 per GB (2^30 bytes) on the bill's Data Transfer line, and says how the free 100 GB are treated", () => {
    const unit = sheet.units.dataTransferOutBytes;
    const [line] = unit.lines;
    expect(line).toMatchObject({ usd: 0.09, per: 'GB', line: 'Data transfer out', service: 'AWS Data Transfer' });
    expect(unit.usd_per_unit * GB).toBeCloseTo(0.09, 12);
    expect(line!.source).toMatch(/aws\.amazon\.com\/ec2\/pricing\/on-demand/);
    expect(line!.source).toMatch(/aws\.amazon\.com\/api-gateway\/pricing/);
    expect(line!.basis).toMatch(/no free tier: the first 100 GB/);
  });
});

const usage = [
  { subject: 'link#calls1', day: '2026-11-02', units: { apiRequests: 100, webhookEvents: 100, dataTransferOutBytes: 100 * 400 } },
  { subject: 'project#a', day: '2026-11-03', units: { apiRequests: 20, stateTransitions: 40, dataTransferOutBytes: 5 * GB } },
  { subject: 'project#a', day: '2026-11-04', units: { dataTransferOutBytes: 1 * GB } },
];
const report = costReport({
  from: '2026-11-01',
  to: '2026-11-04',
  sheet,
  usage,
  executionCosts: Array.from({ length: 10 }, () => ({ project: 'a', workflow_id: 'wf', units: { stateTransitions: 4 } })),
});
const LINK_BYTES = 100 * 400;
const PROJECT_BYTES = 6 * GB;
const usdOfBytes = (bytes: number) => (bytes / GB) * 0.09;

describe('the cost report', () => {
  it("has a data transfer line: the metered bytes at the sheet's price per GB, in the services, days and totals", () => {
    const line = report.services.find((service) => service.service === 'Data transfer out')!;
    expect(line.units).toBe(LINK_BYTES + PROJECT_BYTES);
    expect(line.usd).toBeCloseTo(usdOfBytes(LINK_BYTES + PROJECT_BYTES), 8);
    expect(report.days[3]!.usd_by_service['Data transfer out']).toBeCloseTo(0.09, 8);
    const byHand = usdOfBytes(LINK_BYTES + PROJECT_BYTES) + 120 * REQUEST + 40 * TRANSITION;
    expect(report.total_usd).toBeCloseTo(byHand, 7);
  });

  it('sums it up with its GB and its subjects, most bytes first', () => {
    expect(report.data_transfer_out).toEqual({
      service: 'Data transfer out',
      bytes: LINK_BYTES + PROJECT_BYTES,
      gb: Math.round(((LINK_BYTES + PROJECT_BYTES) / GB) * 1e9) / 1e9,
      usd_per_gb: 0.09,
      usd: expect.closeTo(usdOfBytes(LINK_BYTES + PROJECT_BYTES), 8) as number,
      subjects: [
        { subject: 'project#a', bytes: PROJECT_BYTES, usd: expect.closeTo(0.54, 8) as number },
        { subject: 'link#calls1', bytes: LINK_BYTES, usd: expect.closeTo(usdOfBytes(LINK_BYTES), 8) as number },
      ],
    });
  });

  it('is a CSV row in bytes and a table row that says its unit and price', () => {
    const line = report.services.find((service) => service.service === 'Data transfer out')!;
    expect(costReportCsv(report).split('\r\n')).toContain(
      `Data transfer out,${LINK_BYTES + PROJECT_BYTES},${line.usd.toFixed(8)},,,,,,AWS Data Transfer,DataTransfer-Out-Bytes`,
    );
    expect(costReportTable(report)).toMatch(
      new RegExp(`^Data transfer out \\(bytes, \\$0\\.09 per GB\\) +${LINK_BYTES + PROJECT_BYTES} +${line.usd.toFixed(8)}$`, 'm'),
    );
  });
});

describe('the estimate', () => {
  const links: LinkSample[] = [{ subject: 'link#calls1', type: 'calls', events: 100 }];
  const averages = measureAverages(report, links, { nowMs: Date.parse('2026-11-26T00:00:00Z') });

  it("counts a call event's data transfer: its link's answers over its events", () => {
    // Averages are in dollars to a millionth of a cent, as the report's.
    expect(averages.call_event.data_transfer_usd).toBeCloseTo(usdOfBytes(LINK_BYTES) / 100, 8);
    expect(averages.call_event.usd).toBeCloseTo((100 * REQUEST + usdOfBytes(LINK_BYTES)) / 100, 8);
    expect(averages.dialog.data_transfer_usd).toBeNull();
  });

  it("counts an execution's data transfer on its request side: its project's answers shared by the project's runs", () => {
    expect(averages.run.data_transfer_usd).toBeCloseTo(usdOfBytes(PROJECT_BYTES) / 10, 8);
    expect(averages.run.request_usd).toBeCloseTo((20 * REQUEST + usdOfBytes(PROJECT_BYTES)) / 10, 8);
    expect(averages.run.step_usd).toBeCloseTo(4 * TRANSITION, 10);
  });

  it('prices each line with it, says its share, and leaves the fixed line as it was', () => {
    const forecast = forecastCost({
      averages,
      fixed: report.fixed_monthly_usd,
      volumes: { events: 1_000_000, dialogs: 0, runs: 1000 },
      months: 1,
      volumesFrom: 'flags',
    });
    const [events, , runs, fixed] = forecast.lines;
    expect(events!.monthly_usd).toBeCloseTo(1_000_000 * averages.call_event.usd!, 4);
    expect(events!.samples).toMatch(/^100 events on 1 link, of which data transfer \$0\.0000000\d+$/);
    expect(runs!.monthly_usd).toBeCloseTo(1000 * averages.run.usd!, 6);
    expect(runs!.samples).toMatch(/, of which data transfer \$0\.054/);
    expect(fixed!.usd_each).toBeCloseTo(
      report.fixed_monthly_usd.reduce((sum, item) => sum + item.usd, 0),
      8,
    );
  });
});

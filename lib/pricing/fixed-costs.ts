import { ROUTE_GROUPS, routes } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { TABLE_ENV } from '#shared/resources.ts';
import { LATENCY_P99_MS } from '#lib/cdk/constructs/operations.ts';
import type { PriceSheet } from './price-sheet.ts';

/**
 * The metrics the stack's alarms read (each billed per month): two per function (errors, throttles), two per route
 * group (requests and 5xx), one per latency alarm, API Gateway's 5xx, three for workflow executions, callbacks
 * abandoned, two for collection executions, four for the nightly collection, two per table. A template test checks
 * this against the synthesized alarms.
 */
export function alarmMetricCount(): number {
  const functions = routes.length + taskFunctions.length;
  return functions * 2 + ROUTE_GROUPS.length * 2 + Object.keys(LATENCY_P99_MS).length + 1 + 3 + 1 + 2 + 4 + Object.keys(TABLE_ENV).length * 2;
}

/** What the stack costs each month while nobody uses it: alarms, the dashboard and the alarm topic's key, nothing else. */
export function fixedMonthlyCosts(sheet: PriceSheet) {
  const alarmMetrics = alarmMetricCount();
  return [
    { item: 'CloudWatch alarms', count: alarmMetrics, usd: round(alarmMetrics * sheet.fixed_monthly.alarm_metric.usd) },
    { item: 'CloudWatch dashboard', count: 1, usd: sheet.fixed_monthly.dashboard.usd },
    { item: 'KMS key (alarm topic)', count: 1, usd: sheet.fixed_monthly.kms_key.usd },
  ];
}

const round = (usd: number) => Math.round(usd * 100) / 100;

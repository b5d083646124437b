import { ROUTE_GROUPS, routeFunctions } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { TABLE_ENV } from '#shared/resources.ts';
import { customMetricCount } from '#shared/lambda/custom-metrics.ts';
import { LATENCY_P99_MS, LEAN_ALARM_METRICS, type OperationsMode } from '#lib/cdk/constructs/operations.ts';
import type { PriceSheet } from './price-sheet.ts';

/**
 * The metrics the stack's alarms read (each billed per month): two per function (errors, throttles), two per route
 * group (requests and 5xx), one per latency alarm, API Gateway's 5xx, three for workflow executions, callbacks
 * abandoned, two for collection executions, four for the nightly collection, two per table; a lean stack only those of
 * LEAN_ALARM_METRICS. A template test checks both against the synthesized alarms.
 */
export function alarmMetricCount(mode: OperationsMode = 'full'): number {
  if (mode === 'lean') return Object.values(LEAN_ALARM_METRICS).reduce((sum, metrics) => sum + metrics, 0);
  const functions = routeFunctions().length + taskFunctions.length;
  return (
    functions * 2 + ROUTE_GROUPS.length * 2 + Object.keys(LATENCY_P99_MS).length + 1 + 3 + 1 + 2 + 4 + Object.keys(TABLE_ENV).length * 2
  );
}

/**
 * What the stack bills each month whatever its traffic: the alarms (per metric they read), the dashboard, the alarm
 * topic's KMS key, and the custom metrics the functions publish (functions/shared/lambda/custom-metrics.ts: CloudWatch
 * bills each metric by the hour it receives data, so this is the month of a deployment busy every hour, a ceiling);
 * and the nightly schedule's SQS dead-letter queue, listed at $0: SQS bills requests, and the queue gets one only when
 * the schedule fails to invoke its function after its retries (its price per million is in the sheet). Everything else
 * is billed per request (and metered per invocation, CloudWatch Logs ingestion and EventBridge events included).
 * `mode` is the stack's `operations` setting: a lean stack keeps the same items, its dashboard counted 0, so a
 * report's rows line up whichever was deployed; its functions publish the same custom metrics.
 */
export function fixedMonthlyCosts(sheet: PriceSheet, mode: OperationsMode = 'full') {
  const alarmMetrics = alarmMetricCount(mode);
  const customMetrics = customMetricCount();
  const dashboards = mode === 'lean' ? 0 : 1;
  return [
    { item: 'CloudWatch alarms', count: alarmMetrics, usd: round(alarmMetrics * sheet.fixed_monthly.alarm_metric.usd) },
    { item: 'CloudWatch dashboard', count: dashboards, usd: round(dashboards * sheet.fixed_monthly.dashboard.usd) },
    { item: 'KMS key (alarm topic)', count: 1, usd: sheet.fixed_monthly.kms_key.usd },
    { item: 'CloudWatch custom metrics', count: customMetrics, usd: round(customMetrics * sheet.fixed_monthly.custom_metric.usd) },
    { item: 'SQS dead-letter queue (nightly schedule)', count: 1, usd: sheet.fixed_monthly.dead_letter_queue.usd },
  ];
}

const round = (usd: number) => Math.round(usd * 100) / 100;

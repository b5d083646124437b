import { ROUTE_GROUPS } from '../http/route-groups.ts';

/**
 * Every custom metric the functions publish through Powertools Metrics (EMF lines that CloudWatch turns into metrics),
 * by dimension set. CloudWatch bills each distinct metric name × dimension values per month, so this list is what
 * the fixed monthly cost counts (lib/pricing/fixed-costs.ts); test/unit/custom-metrics.test.ts reads the functions'
 * `addMetric` calls and fails when the code publishes a metric this list does not name, or stops publishing one it does.
 * Every function has the same `service` (POWERTOOLS_SERVICE_NAME), so a metric two functions publish is one metric.
 */
export const SERVICE_METRICS = [
  // A usage item that could not be written (metering/usage-settlement.ts).
  'UsageWriteFailures',
  // Webhooks.
  'EventsAccepted',
  'EventsDuplicate',
  // Runs and streams.
  'WorkflowRunsStarted',
  'WorkflowRunsJoined',
  'WorkflowRunsFinished',
  'ApprovalsAwaited',
  'CallbacksDelivered',
  'CallbacksAbandoned',
  'ExecutionsReconciled',
  'EventStreamsOpened',
  'EventStreamsAbandoned',
  'EventStreamsSlowReaders',
  // The nightly collection.
  'ConversationsHandedOff',
  'CollectionFailures',
  'NightlySweepsLate',
] as const;

/**
 * Published with the `RouteGroup` dimension too, once per route group the functions measure (powertools.ts
 * publishRequestMetrics): the REST API's. The webhook API's HTTP API measures its own requests (AWS/ApiGateway, free).
 */
export const ROUTE_GROUP_METRICS = ['HttpRequests', 'Http5xx', 'Http4xx', 'HttpLatency'] as const;
const MEASURED_ROUTE_GROUPS = ROUTE_GROUPS.filter((group) => group !== 'webhooks');

/** How many custom metrics a busy deployment has in CloudWatch: each name with `service`, and each group metric per group. */
export function customMetricCount(): number {
  return SERVICE_METRICS.length + ROUTE_GROUP_METRICS.length * MEASURED_ROUTE_GROUPS.length;
}

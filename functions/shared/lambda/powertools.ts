import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';

/**
 * A Logger that never logs the invocation event, whatever POWERTOOLS_LOGGER_LOG_EVENT or a middleware option
 * says: events carry webhook tokens (in the path), API keys (in a header) and callers' bodies.
 */
class EventFreeLogger extends Logger {
  public override shouldLogEvent(): boolean {
    return false;
  }
}

/** One Logger, Metrics and Tracer per process; service name and namespace come from POWERTOOLS_* variables. */
export const logger = new EventFreeLogger();
export const metrics = new Metrics();
/**
 * Outgoing HTTP is not traced: a traced request records its URL path, and callback URLs are the caller's, with
 * whatever secret their path holds. AWS calls are traced through the SDK clients instead (`traced()`), which
 * record the operation and the table, never a URL. Response and error capture are off in the functions'
 * environment (lib/cdk/constructs/handler-function.ts).
 */
export const tracer = new Tracer({ captureHTTPsRequests: false });

/** X-Ray subsegments for every call of an SDK client (a no-op where tracing is off: locally and in tests). */
export function traced<Client>(client: Client): Client {
  return tracer.captureAWSv3Client(client);
}

export { MetricUnit };

/** One Metrics per route group, made once: a new instance per request would read its whole configuration again. */
const routeGroupMetrics = new Map<string, Metrics>();

/**
 * One request of a route group: one EMF record with the `RouteGroup` dimension (beside the default `service`), so the
 * per-group alarms and the dashboard read `HttpRequests`, `Http4xx`, `Http5xx` and the `HttpLatency` percentiles.
 * One log line per request, not one per metric: CloudWatch Logs bills what it ingests.
 */
export function publishRequestMetrics(group: string, statusCode: number, latencyMs: number): void {
  let groupMetrics = routeGroupMetrics.get(group);
  if (!groupMetrics) {
    groupMetrics = new Metrics({ defaultDimensions: { RouteGroup: group } });
    routeGroupMetrics.set(group, groupMetrics);
  }
  groupMetrics.addMetric('HttpRequests', MetricUnit.Count, 1);
  groupMetrics.addMetric('Http5xx', MetricUnit.Count, statusCode >= 500 ? 1 : 0);
  groupMetrics.addMetric('Http4xx', MetricUnit.Count, statusCode >= 400 && statusCode < 500 ? 1 : 0);
  groupMetrics.addMetric('HttpLatency', MetricUnit.Milliseconds, latencyMs);
  groupMetrics.publishStoredMetrics();
}

/**
 * Publishes the invocation's metrics when it ends, as Powertools' `logMetrics` does, but never an empty record: on
 * the twin, concurrent invocations share a worker's Metrics, and the first to end publishes them all.
 */
export function publishMetricsAtEnd(): { after: () => Promise<void>; onError: () => Promise<void> } {
  const publish = async () => {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  };
  return { after: publish, onError: publish };
}

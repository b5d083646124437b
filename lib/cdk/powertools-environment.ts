/**
 * Powertools settings every function shares. The API's webhook tokens travel in request paths, and request and
 * response bodies carry callers' data, so none of it may reach logs or traces: the Logger never logs the event,
 * and the Tracer records neither handler responses nor errors (errors are logged, with the trace id) nor
 * outgoing HTTP requests (their URLs can be callers' callback URLs, whose paths may hold secrets).
 */
export const POWERTOOLS_ENVIRONMENT: Readonly<Record<string, string>> = {
  POWERTOOLS_SERVICE_NAME: 'workflow-ingest',
  POWERTOOLS_METRICS_NAMESPACE: 'WorkflowIngest',
  POWERTOOLS_LOG_LEVEL: 'INFO',
  POWERTOOLS_LOGGER_LOG_EVENT: 'false',
  POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
  POWERTOOLS_TRACER_CAPTURE_ERROR: 'false',
  POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS: 'false',
};

import { describe, expect, it } from 'vitest';
import { gatewayOf, routes } from '#functions/routes.ts';
import { ACCESS_LOG_LINE_BYTES, WEBHOOK_ACCESS_LOG_LINE_BYTES } from '#shared/metering/log-meter.ts';
import { WEBHOOK_ACCESS_LOG_FORMAT } from '#lib/cdk/constructs/webhook-api.ts';
import { ACCESS_LOG_FORMAT } from '#lib/cdk/constructs/api.ts';

/**
 * Every request API Gateway serves writes one access log line, which CloudWatch Logs bills per GB ingested: the meter
 * counts ACCESS_LOG_LINE_BYTES for it. Rendered here with the widest values a request of this product gives each
 * field, the line must fit that figure (and not be far below it: an estimate twice the line would overcharge).
 */
describe("the access log line's metered bytes", () => {
  const longestOf = (kind: 'restApi' | 'httpApi') =>
    routes
      .filter((route) => gatewayOf(route) === kind)
      .map((route) => `${route.method} ${route.path}`)
      .sort((a, b) => b.length - a.length)[0]!;
  const longestResource = longestOf('restApi').split(' ')[1]!;
  const widest: Record<string, string> = {
    '$context.requestId': 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
    '$context.requestTime': '07/Dec/2026:22:04:45 +0000',
    '$context.identity.sourceIp': '203.000.113.255',
    '$context.httpMethod': 'DELETE',
    '$context.resourcePath': longestResource,
    '$context.status': '201',
    '$context.protocol': 'HTTP/1.1',
    '$context.responseLength': '1048576',
    '$context.responseLatency': '29999',
    '$context.integrationLatency': '29999',
    '$context.integrationStatus': '201',
    '$context.error.responseType': 'INTEGRATION_FAILURE',
    '$context.error.messageString': '"Internal server error"',
    '$context.integrationErrorMessage': '-',
  };

  it('fits the widest line this product logs, within 25 %', () => {
    const format = ACCESS_LOG_FORMAT.toString();
    const variables = format.match(/\$context\.[A-Za-z.]+/g) ?? [];
    expect(variables.length).toBe(14);
    for (const variable of variables) expect(widest, `a width for ${variable}`).toHaveProperty([variable]);
    const line = variables.reduce((text, variable) => text.replace(variable, widest[variable]!), format);
    const bytes = Buffer.byteLength(line, 'utf8') + 1;
    expect(ACCESS_LOG_LINE_BYTES).toBeGreaterThanOrEqual(bytes);
    expect(ACCESS_LOG_LINE_BYTES).toBeLessThanOrEqual(bytes * 1.25);
  });

  it("fits the webhook API's widest line within 25 %: an HTTP API request id, the longest route key, a 7-digit length", () => {
    const webhookWidest: Record<string, string> = {
      '$context.requestId': 'JIdLRhlNIAMEJhw=',
      '$context.requestTime': '07/Dec/2026:22:04:45 +0000',
      '$context.identity.sourceIp': '203.000.113.255',
      '$context.routeKey': longestOf('httpApi'),
      '$context.status': '201',
      '$context.responseLength': '1048576',
      '$context.responseLatency': '29999',
      '$context.integrationErrorMessage': '-',
    };
    const format = WEBHOOK_ACCESS_LOG_FORMAT.toString();
    const variables = format.match(/\$context\.[A-Za-z.]+/g) ?? [];
    expect(variables.length).toBe(8);
    const line = variables.reduce((text, variable) => text.replace(variable, webhookWidest[variable]!), format);
    const bytes = Buffer.byteLength(line, 'utf8') + 1;
    expect(WEBHOOK_ACCESS_LOG_LINE_BYTES).toBeGreaterThanOrEqual(bytes);
    expect(WEBHOOK_ACCESS_LOG_LINE_BYTES).toBeLessThanOrEqual(bytes * 1.25);
  });
});

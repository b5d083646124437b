import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { emptyCostUnits, reportRequestCost, runMetered } from './cost-meter.ts';
import { DomainError } from './errors.ts';
import { errorResponse, type ErrorBodyShape } from './http-errors.ts';
import { logger, metrics, publishCostUnits, tracer } from './powertools.ts';

export type HttpRequest = APIGatewayProxyEvent;
export type HttpResponse = APIGatewayProxyResult;

/**
 * Wraps a route's adapter function in the middy stack every API handler shares:
 * Powertools context/metrics/tracing, cost metering, and the one error-to-HTTP mapping.
 */
export function httpHandler(
  errorShape: ErrorBodyShape,
  adapter: (request: HttpRequest, context: Context) => Promise<HttpResponse>,
  options: { streaming?: boolean } = {},
) {
  const metered = async (request: HttpRequest, context: Context): Promise<HttpResponse> => {
    const units = emptyCostUnits();
    try {
      return await runMetered(units, () => adapter(request, context));
    } finally {
      publishCostUnits(units);
      reportRequestCost(context.functionName, units);
    }
  };
  // Streaming routes answer through Lambda response streaming; middy turns the returned response into the stream.
  return middy(metered, { streamifyResponse: options.streaming ?? false })
    .use(captureLambdaHandler(tracer))
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics))
    .use({
      onError: async (request) => {
        const { error } = request;
        if (error instanceof DomainError && error.statusCode < 500) {
          logger.info('request refused', { statusCode: error.statusCode, reason: error.message });
        } else {
          logger.error('request failed', error as Error);
        }
        request.response = errorResponse(error, errorShape);
      },
    });
}

export function jsonResponse(statusCode: number, body: unknown): HttpResponse {
  return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

/** Header lookup is case-insensitive in HTTP; API Gateway passes names as the client sent them. */
export function header(request: HttpRequest, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(request.headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

export function rawBody(request: HttpRequest): Buffer {
  if (request.body == null) return Buffer.alloc(0);
  return Buffer.from(request.body, request.isBase64Encoded ? 'base64' : 'utf8');
}

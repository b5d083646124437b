import type { APIGatewayProxyResult } from 'aws-lambda';
import { DomainError, RateLimitedError, ServiceUnavailableError, ValidationError } from '../errors.ts';
import { isTransientServiceError } from '../store/transient-errors.ts';
import * as z from '../zod.ts';

/**
 * The one place that maps errors to HTTP. Each API has its own body shape:
 * - webhook (Inbound Conversation Webhook API, functions/inbound/README.md#the-contract-in-brief): `{error}` and, for
 *   400, `details`;
 * - published (Published Workflow API, functions/published/README.md#the-contract-in-brief): `{detail}`.
 * Typed errors carry messages written for callers. A store or service still throttled or failing after the SDK's own
 * retries (isTransientServiceError) is the caller's to retry: 503 with `Retry-After`, its AWS name kept out of the
 * body. Anything else becomes a generic 500 whose details stay in the log.
 */
export type ErrorBodyShape = 'webhook' | 'published';

/** API Gateway's own answers (lib/cdk/gateway-responses.ts) carry the message under both names, whichever API it is. */
const GATEWAY_TWIN = "Only in API Gateway's own answers (unknown route, stage throttle, failed or timed-out integration): the same message";

const fieldIssueSchema = z.object({
  field: z.string().check(
    z.meta({
      description: 'The field in dot notation (`messages.0.text`, `audio.url`), or `body` for the body as a whole',
      examples: ['audio.url'],
    }),
  ),
  message: z.string(),
});

export const webhookErrorBodySchema = z.object({
  error: z.string().check(z.meta({ examples: ['Validation error'] })),
  details: z.optional(z.array(fieldIssueSchema).check(z.meta({ description: 'With 400 only: what is wrong, field by field' }))),
});

/**
 * The webhook API's HTTP API answering by itself (lib/twin/http-api-answers.ts): its stage throttle (429), a failed
 * (500) or timed-out (503) integration. Nothing can shape it, and it carries no Retry-After.
 */
export const httpApiErrorBodySchema = z.object({
  message: z.string().check(z.meta({ description: "API Gateway's own message", examples: ['Service Unavailable'] })),
});

export const publishedErrorBodySchema = z.object({
  detail: z.string().check(
    z.meta({
      description: 'What went wrong, for people; a 400 names the fields (`user_id: Too small: ...`)',
      examples: ['Workflow not found'],
    }),
  ),
  error: z.optional(z.string().check(z.meta({ description: GATEWAY_TWIN }))),
});

type WebhookErrorBody = z.output<typeof webhookErrorBodySchema>;
type PublishedErrorBody = z.output<typeof publishedErrorBodySchema>;

const GENERIC_SERVER_ERROR = 'Internal server error';

/** What the caller reads when a dependency stayed throttled or unavailable through the SDK's retries. */
export const BUSY_MESSAGE = 'The service is busy; retry later';

export function errorResponse(thrown: unknown, shape: ErrorBodyShape): APIGatewayProxyResult {
  const error = !(thrown instanceof DomainError) && isTransientServiceError(thrown) ? new ServiceUnavailableError(BUSY_MESSAGE) : thrown;
  const statusCode = error instanceof DomainError ? error.statusCode : 500;
  const message = error instanceof DomainError ? error.message : GENERIC_SERVER_ERROR;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (error instanceof RateLimitedError || error instanceof ServiceUnavailableError)
    headers['retry-after'] = String(error.retryAfterSeconds);
  return { statusCode, headers, body: JSON.stringify(shape === 'webhook' ? webhookBody(error, message) : publishedBody(error, message)) };
}

function webhookBody(error: unknown, message: string): WebhookErrorBody {
  return error instanceof ValidationError ? { error: message, details: error.details } : { error: message };
}

function publishedBody(error: unknown, message: string): PublishedErrorBody {
  if (error instanceof ValidationError && error.details.length > 0) return { detail: `${message}: ${formatIssues(error)}` };
  return { detail: message };
}

function formatIssues(error: ValidationError): string {
  return error.details.map((issue) => `${issue.field}: ${issue.message}`).join('; ');
}

import { routes } from '#functions/routes.ts';
import { BUSY_MESSAGE, httpApiErrorBodySchema, webhookErrorBodySchema } from '#shared/http/http-errors.ts';
import {
  DOCUMENT_RESPONSES,
  IF_NONE_MATCH_PARAMETER,
  OPENAPI_VERSION,
  openApiDocument,
  requestBodyComponents,
  schemaComponents,
  type JsonSchema,
  type OpenApiVersion,
  type OperationDoc,
  type ResponseDoc,
} from '#shared/http/openapi.ts';
import { WEBHOOKS_PREFIX } from '#shared/http/route-groups.ts';
import {
  MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK,
  MAX_REQUEST_BODY_BYTES,
  MAX_REQUESTS_PER_MINUTE_PER_LINK,
  MAX_UNKNOWN_TOKENS_PER_IP,
  UNKNOWN_TOKEN_WINDOW_MS,
} from '#shared/limits.ts';
import { MINUTE_MS } from '#shared/time.ts';
import { RATE_LIMITS } from '#shared/rate-limits.ts';
import * as z from '#shared/zod.ts';
import { callEventSchema, textEventSchema } from './event-schema.ts';
import { LINK_TOKEN_PATTERN } from './link-model.ts';
import { acceptedResponseSchema, duplicateResponseSchema, pingResponseSchema } from './webhook-views.ts';

/**
 * The Inbound Conversation Webhook API's OpenAPI document (GET /api/v1/webhooks/openapi.json): its operations are
 * the route table's, the event schemas the ones ingest validates with, the answers the ones ingest returns.
 */

const requests = requestBodyComponents({
  CallEvent: callEventSchema,
  TextEvent: textEventSchema,
  Event: z.discriminatedUnion('type', [callEventSchema, textEventSchema]),
});

const responses = schemaComponents('output', {
  PingResponse: pingResponseSchema,
  Accepted: acceptedResponseSchema,
  Duplicate: duplicateResponseSchema,
  Error: webhookErrorBodySchema,
  GatewayError: httpApiErrorBodySchema,
  Refusal: z.union([webhookErrorBodySchema, httpApiErrorBodySchema]),
});

const error = (
  description: string,
  examples: Record<string, unknown>,
  headers?: (string | readonly [string, string])[],
  json = 'Error',
): ResponseDoc => ({
  json,
  description,
  examples,
  ...(headers ? { headers } : {}),
});

/** Refusals as the code words them (`{"error"}`, and for 400 `details`), one example per cause. */
const REFUSALS = {
  invalid: {
    error: 'Validation error',
    details: [
      { field: 'audio.url', message: 'scheme must be https' },
      { field: 'occurred_at', message: 'must be an ISO 8601 date-time with a zone offset (+HH:MM or Z)' },
    ],
  },
  unknownLink: { error: 'Unknown webhook link' },
  timedOut: { error: 'Request body was not received within 30 seconds' },
  notBound: { error: 'The link is issued but no source is connected yet' },
  tooLarge: { error: 'Request body exceeds 1 MiB' },
  linkRate: { error: RATE_LIMITS.requestsPerLinkPerMinute.refusal },
  dailyQuota: { error: RATE_LIMITS.acceptedEventsPerLinkPerDay.refusal },
  guessing: { error: RATE_LIMITS.unknownTokensPerIp.refusal },
  // The HTTP API's own answers (lib/twin/http-api-answers.ts): `{"message"}`, no Retry-After.
  stageThrottle: { message: 'Too Many Requests' },
  integrationFailure: { message: 'Internal Server Error' },
  integrationTimeout: { message: 'Service Unavailable' },
  internal: { error: 'Internal server error' },
  busy: { error: BUSY_MESSAGE },
} as const;

const LIMITED = error(
  `A limit is exceeded (${MAX_REQUESTS_PER_MINUTE_PER_LINK} requests per minute per link, ${MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK} ` +
    'accepted events per UTC day, the protection against token guessing): wait Retry-After seconds and retry. The stage ' +
    'throttle\'s own 429 (`{"message"}`) has no Retry-After: wait a second',
  {
    link_rate: REFUSALS.linkRate,
    daily_quota: REFUSALS.dailyQuota,
    token_guessing: REFUSALS.guessing,
    stage_throttle: REFUSALS.stageThrottle,
  },
  ['Retry-After'],
  'Refusal',
);
const UNKNOWN_LINK = error(
  'Unknown token, revoked link, or more than 24 hours since the link was reissued: do not retry, obtain the current link',
  { unknown_link: REFUSALS.unknownLink },
);
const SERVER_ERRORS: Record<string, ResponseDoc> = {
  '500': error(
    'Internal error, the function\'s (`{"error"}`) or the gateway\'s (`{"message"}`): retry with the same external_id, with ' +
      'growing delays',
    { internal: REFUSALS.internal, integration_failure: REFUSALS.integrationFailure },
    undefined,
    'Refusal',
  ),
  '503': error(
    'The service is busy (`{"error"}`, with Retry-After), or the function did not answer within 30 s (`{"message"}`): retry with ' +
      'the same external_id, with growing delays',
    { busy: REFUSALS.busy, integration_timeout: REFUSALS.integrationTimeout },
    ['Retry-After'],
    'Refusal',
  ),
};
const DOCUMENT_THROTTLED = error(
  'The stage throttle: wait a second',
  { stage_throttle: REFUSALS.stageThrottle },
  undefined,
  'GatewayError',
);

const NOW = '2026-05-01T12:30:00+03:00';

const operations: Record<string, OperationDoc> = {
  WebhookOpenApi: {
    summary: 'This document',
    description:
      'The OpenAPI 3.2 description of the Inbound Conversation Webhook API, its server the address it was fetched from. Needs no token.',
    tags: ['meta'],
    parameters: [IF_NONE_MATCH_PARAMETER],
    responses: { ...DOCUMENT_RESPONSES, '429': DOCUMENT_THROTTLED },
  },
  WebhookOpenApi31: {
    summary: 'This document as OpenAPI 3.1',
    description: 'The same description for tools that read OpenAPI 3.1 but not 3.2. Needs no token.',
    tags: ['meta'],
    parameters: [IF_NONE_MATCH_PARAMETER],
    responses: { ...DOCUMENT_RESPONSES, '429': DOCUMENT_THROTTLED },
  },
  WebhookDocs: {
    summary: 'This reference, for reading',
    description:
      'A page that renders openapi-3.1.json with Redoc in the browser. It loads only from this API: the document and the script ' +
      'beside the page. Needs no token.',
    tags: ['meta'],
    responses: { '200': { description: 'The page', text: 'text/html' }, '429': DOCUMENT_THROTTLED },
  },
  WebhookDocsScript: {
    summary: 'The script of the reference page',
    description:
      "Redoc's standalone bundle, which the reference page loads; gzip-encoded when the request accepts it. Under the version the " +
      'page names (`v`) it may be kept for a year. Needs no token.',
    tags: ['meta'],
    parameters: [{ name: 'v', in: 'query', description: "The script's version, as the page names it", schema: { type: 'string' } }],
    responses: { '200': { description: 'The script', text: 'text/javascript' }, '429': DOCUMENT_THROTTLED },
  },
  WebhookPing: {
    summary: 'Check a link',
    description:
      'Whether the token names a live link, and whether a source is connected to it yet (events are refused with 409 until one is). ' +
      "Counts against the link's request rate like any request.",
    tags: ['webhook'],
    responses: { '200': { description: 'The link is known', json: 'PingResponse' }, '404': UNKNOWN_LINK, '429': LIMITED, ...SERVER_ERRORS },
  },
  WebhookPostEvent: {
    summary: 'Send one finished conversation',
    description:
      `One call or dialog per request, at most ${MAX_REQUEST_BODY_BYTES} bytes, fully sent within 30 seconds. Deduplicated on (link's ` +
      `source, external_id): a repeat passes the same checks and answers 200 duplicate. A 201 or 200 confirms queueing for the nightly ` +
      `collection. Unknown fields are ignored; strings are never coerced.`,
    tags: ['webhook'],
    requestBody: {
      schema: 'Event',
      required: true,
      description: "The type must match the link's connector type (call for calls, text for dialogs)",
      examples: {
        call: {
          type: 'call',
          external_id: 'call-1',
          occurred_at: NOW,
          source_channel: 'site',
          metadata: { direction: 'inbound' },
          audio: { url: 'https://records.example.com/call-1.mp3', format: 'mp3', duration_seconds: 63, channels: 2 },
        },
        dialog: {
          type: 'text',
          external_id: 'chat-1',
          occurred_at: NOW,
          messages: [
            { text: 'Hello', timestamp: NOW, author_name: 'Ann', author_role: 'client' },
            { text: 'Hi, how can I help?', timestamp: NOW, author_name: 'Bob', author_role: 'operator' },
          ],
        },
      },
    },
    responses: {
      '201': {
        description: 'Accepted and queued',
        json: 'Accepted',
        examples: { call: { status: 'accepted', external_id: 'call-1', event_id: 1042, messages: 0 } },
      },
      '200': {
        description: 'Duplicate external_id: already accepted, this content ignored',
        json: 'Duplicate',
        examples: { call: { status: 'duplicate', external_id: 'call-1', event_id: 1042 } },
      },
      '400': error(
        "Invalid JSON, a schema violation, the other type than the link's, a date without offset or outside the window, a disallowed " +
          'recording link, text that is not well-formed Unicode, a filter value with control or bidirectional formatting characters: ' +
          'fix the body and resend with the same external_id',
        { invalid_event: REFUSALS.invalid },
      ),
      '404': UNKNOWN_LINK,
      '408': error('The body was not fully received within 30 seconds: resend the whole request with the same external_id', {
        timed_out: REFUSALS.timedOut,
      }),
      '409': error('The link is issued but no source is connected yet: ask the administrator, check ping, retry', {
        not_bound: REFUSALS.notBound,
      }),
      '413': error(`The body is larger than ${MAX_REQUEST_BODY_BYTES} bytes: make it smaller and retry with the same external_id`, {
        too_large: REFUSALS.tooLarge,
      }),
      '429': LIMITED,
      ...SERVER_ERRORS,
    },
  },
};

const built = new Map<OpenApiVersion, JsonSchema>();

/** Built once per process and version: the route table and the schemas do not change while it runs. */
export function webhookApiDocument(version: OpenApiVersion = OPENAPI_VERSION): JsonSchema {
  let document = built.get(version);
  if (!document) {
    document = buildDocument(version);
    built.set(version, document);
  }
  return document;
}

const INFO_DESCRIPTION = [
  'Receives finished conversations from external systems: a call with a link to its recording, or a text dialog, one per request. ' +
    'Each connected source has a personal link; its token, in the path, is the only credential.',
  "Events are deduplicated on the link's source and `external_id`: a retry with the same `external_id` is always safe and answers " +
    '200 duplicate once the first was accepted. Accepted events are queued for the nightly collection.',
  `Refusals are JSON \`{"error": "..."}\`, with \`details\` field by field on a 400; 429 and 503 carry Retry-After. The gateway's own ` +
    `answers (stage throttle 429, 500, 503) are \`{"message": "..."}\` without it: retry those after a second. Each link may ` +
    `send ${MAX_REQUESTS_PER_MINUTE_PER_LINK} requests a minute.`,
  'Every string of an event, metadata keys at any depth included, must be well-formed Unicode: half of a surrogate pair alone ' +
    '(JSON `"\\ud800"`) is answered 400 naming the field. `source_channel` and a string `metadata.direction` become filter values ' +
    'an operator reads, so control characters and bidirectional formatting characters there are answered 400 too, never replaced.',
  `The protection against token guessing refuses only unknown tokens: after ${MAX_UNKNOWN_TOKENS_PER_IP} from one address in ` +
    `${UNKNOWN_TOKEN_WINDOW_MS / MINUTE_MS} minutes, its further unknown tokens get 429 until the window ends, while every valid ` +
    'link keeps being served from that address.',
  'This document is also served as OpenAPI 3.1 at `openapi-3.1.json`, beside this one.',
].join('\n\n');

function buildDocument(version: OpenApiVersion): JsonSchema {
  return openApiDocument(
    {
      info: {
        title: 'Inbound Conversation Webhook API',
        version: '1',
        summary: 'Receives finished calls and text dialogs for the nightly collection',
        description: INFO_DESCRIPTION,
      },
      basePath: WEBHOOKS_PREFIX,
      server: {
        variable: 'webhook_base_url',
        description:
          "The webhook API's URL: where this document was fetched from (on AWS the stack's WebhookApiUrl output, or a custom " +
          "domain's URL with its API mapping's path)",
      },
      tags: [
        { name: 'webhook', description: 'A personal link: its token is the secret part of the path, and the only credential' },
        { name: 'meta', description: 'About the API itself' },
      ],
      routes,
      operations,
      pathParameters: {
        token: {
          description: 'The secret part of the personal link: treat it like a password',
          schema: { type: 'string', pattern: LINK_TOKEN_PATTERN.source },
        },
      },
      schemas: { ...requests, ...responses },
      // Not required here: the HTTP API's own 429 and 503 (`{"message"}`) come without it.
      headers: {
        'Retry-After': {
          description: 'Seconds to wait before retrying: with the function\'s 429 and 503, never with the gateway\'s own (`{"message"}`)',
          schema: { type: 'integer', minimum: 1 },
          required: false,
        },
      },
    },
    version,
  );
}

import { routeById } from '#functions/routes.ts';
import type { ResponseDoc } from '#shared/http/openapi.ts';
import { DEFAULT_MAX_OPEN_STREAMS_PER_KEY, MAX_EXECUTE_BODY_BYTES, MAX_REQUESTS_PER_MINUTE_PER_KEY } from '#shared/limits.ts';
import { PUBLISHED_ERRORS as E } from './openapi-examples.ts';

/* The refusals the Published Workflow API's operations document, each with an example in the API's error shape. */

export const error = (description: string, examples: Record<string, unknown>, headers?: string[]): ResponseDoc => ({
  json: 'Error',
  description,
  examples,
  ...(headers ? { headers } : {}),
});

/** What every authenticated operation may answer (authentication and errors); the 403 names the route's own scope. */
export function authenticated(routeId: string): Record<string, ResponseDoc> {
  const scope = routeById(routeId).scope;
  if (!scope) throw new Error(`Route ${routeId} has no scope`);
  return {
    '401': error('No Authorization header, or an invalid, revoked or expired key', { no_key: E.noKey, invalid_key: E.invalidKey }),
    '403': error('The key lacks the scope the operation needs', { missing_scope: E.missingScope(scope) }),
    '429': error(
      `Rate limit exceeded: ${MAX_REQUESTS_PER_MINUTE_PER_KEY} requests per minute per key, or the stage throttle`,
      { key_rate: E.rateLimited, stage_throttle: E.stageThrottle },
      ['Retry-After'],
    ),
    '500': error("Internal error (details only in the service's log)", { internal: E.internal }),
    '503': error(
      "A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is " +
        'after Retry-After seconds',
      { busy: E.unavailable },
      ['Retry-After'],
    ),
  };
}

export const NO_PUBLICATION = error(
  'The project has no active publication, or (with a body) the body is invalid: `detail` names the fields',
  {
    no_publication: E.noPublication,
  },
);
export const START_REFUSED = error(
  'The project has no active publication, or the body, the Idempotency-Key or (stream) Last-Event-ID is invalid: `detail` names the fields',
  {
    invalid_body: E.invalidBody,
    unknown_override: E.invalidOverrides,
    invalid_idempotency_key: E.invalidIdempotencyKey,
    no_publication: E.noPublication,
  },
);
export const KEY_REUSED = error('The Idempotency-Key was used in the last 24 hours for a different request', { key_reused: E.keyReused });
export const TOO_LARGE = error(`The body is larger than ${MAX_EXECUTE_BODY_BYTES} bytes`, { too_large: E.tooLarge });
export const RESUME_REFUSED = error('Last-Event-ID or after is malformed, or past the last event of the execution', {
  past_the_end: E.invalidResumePoint,
});
export const NO_EXECUTION = error('No such execution in this project', { no_execution: E.noExecution });
export const NO_WORKFLOW = error('No such workflow in the active publication', { no_workflow: E.noWorkflow });
export const DOCUMENT_THROTTLED = error('The stage throttle', { stage_throttle: E.stageThrottle }, ['Retry-After']);

/** A stream route's 429: besides the rate limits, its key's open streams, or the deployment's, are all open. */
export function streamAuthenticated(routeId: string): Record<string, ResponseDoc> {
  return {
    ...authenticated(routeId),
    '429': error(
      `Rate limit exceeded (${MAX_REQUESTS_PER_MINUTE_PER_KEY} requests per minute per key, or the stage throttle), or too many streams ` +
        `open: the key's own limit (${DEFAULT_MAX_OPEN_STREAMS_PER_KEY} unless its operator set another) or the deployment's, all keys ` +
        'together. A stream holds its slot until it ends (at the latest at the end of its window, also when its reader left): retry ' +
        'after Retry-After seconds, or close a stream nobody reads',
      {
        key_rate: E.rateLimited,
        stage_throttle: E.stageThrottle,
        key_open_streams: E.keyOpenStreams,
        deployment_open_streams: E.deploymentOpenStreams,
      },
      ['Retry-After'],
    ),
  };
}

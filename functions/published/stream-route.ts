import type { Context } from 'aws-lambda';
import { routePath } from '#functions/routes.ts';
import {
  assertLogOwner,
  checkResumePoint,
  type ResumeField,
  type StreamedEvent,
  type StreamEnd,
  type TailDeps,
  type TailOptions,
} from '#executions/execution-streams.ts';
import { ValidationError } from '#shared/errors.ts';
import { externalUrl } from '#shared/http/external-url.ts';
import { header, type HttpRequest } from '#shared/http/http-stack.ts';
import type { Caller } from '#shared/access.ts';
import { NOTHING_MORE, respondWithEvents, type EventStreamSettings } from './event-stream-response.ts';
import { pathParameter, publishedRoute } from './published-route.ts';
import { openStream, streamLeaseUntil, type OpenStreamsDeps } from './open-streams.ts';

type StreamView = (deps: TailDeps, executionId: string, options: TailOptions) => AsyncGenerator<StreamedEvent, StreamEnd>;

const EVENT_ID = /^\d{1,15}$/;

/**
 * Where a stream resumes: `Last-Event-ID` (what EventSource sends when it reconnects, so it wins over the URL's
 * own `?after=`, which may be older), else `?after=`, else the start. A malformed id is a 400, never a replay.
 */
export function resumePoint(request: HttpRequest): ResumePoint {
  const fromHeader = header(request, 'last-event-id');
  const fromQuery = request.queryStringParameters?.after;
  const [field, raw] = fromHeader !== undefined ? (['Last-Event-ID', fromHeader.trim()] as const) : (['after', fromQuery] as const);
  if (raw === undefined || raw === null || raw === '') return { after: 0, field };
  if (!EVENT_ID.test(raw)) throw new ValidationError([{ field, message: 'must be an event id: a whole number' }]);
  return { after: Number(raw), field };
}

/** The id a stream resumes after, and where the caller gave it: a refusal names what the caller sent. */
export interface ResumePoint {
  after: number;
  field: ResumeField;
}

/** The URL that continues a stream of this route after `lastEventId`. */
export function resumeUrl(request: HttpRequest, routeId: string, executionId: string, lastEventId: number): string {
  return `${externalUrl(request, routePath(routeId, { execution_id: executionId }))}?after=${lastEventId}`;
}

/**
 * GET routes that follow an existing run's log (`/executions/{id}/stream`, `/executions/{id}/events`): they read the
 * stream events table and nothing else, and hold their open stream's slots there. Refusals (401, 403, 404, a resume id
 * past the log's end, 429 for a key or deployment with all its streams open) are JSON. A caller resuming after the last
 * event of an execution that has ended gets 204: the answer that stops EventSource's reconnecting (an empty 200 stream
 * would be retried every few seconds, for ever).
 */
export function followStreamRoute(
  routeId: string,
  deps: TailDeps,
  openStreams: OpenStreamsDeps,
  settings: EventStreamSettings,
  view: StreamView,
) {
  return publishedRoute(routeId, async (request: HttpRequest, caller: Caller, context: Context) => {
    const executionId = pathParameter(request, 'execution_id');
    const { after, field } = resumePoint(request);
    await assertLogOwner(deps, caller, executionId);
    if ((await checkResumePoint(deps, executionId, after, field)) === 'ended') return NOTHING_MORE;
    // The last refusal, once the stream would open: the key's and the deployment's open streams (429 when full).
    const stream = await openStream(
      openStreams,
      caller,
      streamLeaseUntil(openStreams.now(), context.getRemainingTimeInMillis(), settings.maxStreamMs),
    );
    try {
      return await respondWithEvents(
        context,
        settings,
        { after, now: deps.now, resumeUrl: (lastEventId) => resumeUrl(request, routeId, executionId, lastEventId) },
        (options) => view(deps, executionId, { ...options, after }),
      );
    } finally {
      await stream.close();
    }
  });
}

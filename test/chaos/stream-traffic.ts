import { randomUUID } from 'node:crypto';
import type { PublishedContext } from './published-context.ts';
import { readEventStream, type ReadOptions, type StreamRead, type StreamedEvent } from './sse-reader.ts';
import { noteKeyAnswer, type StreamRecord, type SubscriptionRecord, type Workflow } from './traffic-record.ts';

type Random = () => number;

/** As a client gives up on a stream: enough to outlast a burst of faults at the suite's rates (each try fails with p ≤ 0.2). */
const MAX_ATTEMPTS = 10;
const FINAL_STATUSES = new Set(['completed', 'failed', 'cancelled']);

export interface StreamOptions {
  /** The body (execute's, for a stream joining an execute by its Idempotency-Key); a body of its own by default. */
  body?: string;
  idempotencyKey?: string;
  /** The client drops its first connection after two events, and resumes. */
  dropFirst?: boolean;
  /** Sends a stop once this many events arrived (the stream goes on to its end). */
  stopAfterEvents?: number;
  /** Told the execution id as soon as an answer names it. */
  onExecutionId?: (executionId: string) => void;
}

/**
 * A streamed execution (`POST /workflows/{id}/stream`), resumed as often as it breaks: before the first event by the
 * POST again (same key), after it by `GET /executions/{id}/stream` or, as often, by the POST again with its key, both
 * with `Last-Event-ID`. Every answer naming an execution is noted for the key, and the stream is recorded whatever
 * happened to it (one never opened too).
 */
export async function streamRun(context: PublishedContext, workflow: Workflow, random: Random, options: StreamOptions = {}) {
  const { client, record } = context;
  const idempotencyKey = options.idempotencyKey ?? randomUUID();
  const body = options.body ?? JSON.stringify({ user_id: `chaos-${idempotencyKey}`, input: { message: 'stream me' } });
  const headers = context.headers(random, { accept: 'text/event-stream', 'idempotency-key': idempotencyKey });
  const seen: StreamRecord = { workflow, executionId: '', ids: [], resumes: 0, statuses: [] };
  let stopping: Promise<unknown> | undefined;
  let arrived = 0;
  const known = (executionId: string) => {
    if (seen.executionId !== '') return;
    seen.executionId = executionId;
    context.runOf(executionId, workflow, idempotencyKey);
    options.onExecutionId?.(executionId);
  };
  for (let attempt = 0; attempt < MAX_ATTEMPTS && seen.completeStatus === undefined; attempt++) {
    const lastId = seen.ids.at(-1);
    const resumeHeaders = lastId === undefined ? headers : { ...headers, 'last-event-id': String(lastId) };
    const byPost = seen.executionId === '' || random() < 0.5;
    const [url, init] = byPost
      ? [context.url(`/workflows/${workflow}/stream`), { method: 'POST', headers: resumeHeaders, body }]
      : [context.url(`/executions/${seen.executionId}/stream`), { headers: resumeHeaders }];
    if (attempt > 0) client.ledger.retries += 1;
    if (seen.executionId !== '') seen.resumes += 1;
    const readOptions: ReadOptions = {
      dropAfter: attempt === 0 && options.dropFirst ? 2 : Infinity,
      onEvent(event) {
        arrived += 1;
        if (event.event === 'start') known(String((event.data as { execution_id: string }).execution_id));
        if (options.stopAfterEvents !== undefined && !stopping && seen.executionId !== '' && arrived >= options.stopAfterEvents)
          stopping = context.stop(context.runOf(seen.executionId, workflow, idempotencyKey), 'streaming', random);
      },
    };
    const startedAt = performance.now();
    let read: StreamRead;
    try {
      read = await client.tracked(`stream ${workflow}`, url, (signal) => readEventStream(url, init, { ...readOptions, signal }));
    } catch {
      client.ledger.dropped += 1;
      seen.statuses.push(0);
      await client.pauseAfter(undefined, attempt);
      continue;
    }
    client.record(`stream ${workflow}`, url, read.status, read.headers, read.text, startedAt);
    seen.statuses.push(read.status);
    const named = read.headers.get('x-execution-id');
    if (named && byPost) noteKeyAnswer(record, idempotencyKey, named);
    if (named) known(named);
    if (read.status === 204) {
      // The log ended at the event this client named: it must have read that `complete` already.
      if (seen.completeStatus === undefined) seen.endedBefore204 = true;
      break;
    }
    if (read.status !== 200) {
      await client.pauseAfter(read.headers, attempt);
      continue;
    }
    for (const event of read.events) {
      if (event.id !== undefined) seen.ids.push(event.id);
      if (event.event === 'complete') seen.completeStatus = (event.data as { status: string }).status;
    }
  }
  await stopping;
  record.streams.push(seen);
  return seen;
}

/**
 * A subscription to an execution's lifecycle (`GET /executions/{id}/events`), resumed with `Last-Event-ID` when cut,
 * read until the server ends it after the final status, or until `leaveAfter` says the client has seen enough.
 */
export async function subscribe(
  context: PublishedContext,
  executionId: string,
  random: Random,
  options: {
    leaveAfter?: (event: StreamedEvent) => boolean;
    /** The client leaves when this aborts (a decision that never applied: the execution waits on). */
    leave?: AbortSignal;
    beforeDecision?: boolean;
    dropFirst?: boolean;
    after?: number;
  } = {},
): Promise<SubscriptionRecord> {
  const { client } = context;
  const subscription: SubscriptionRecord = {
    executionId,
    events: [],
    ended: 'cut',
    resumes: 0,
    beforeDecision: options.beforeDecision ?? false,
  };
  const url = context.url(`/executions/${executionId}/events${options.after === undefined ? '' : `?after=${options.after}`}`);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (options.leave?.aborted) {
      subscription.ended = 'left';
      break;
    }
    const lastId = subscription.events.at(-1)?.id;
    const headers = context.headers(random, {
      accept: 'text/event-stream',
      ...(lastId === undefined ? {} : { 'last-event-id': String(lastId) }),
    });
    if (attempt > 0) {
      client.ledger.retries += 1;
      subscription.resumes += 1;
    }
    const startedAt = performance.now();
    let read: StreamRead;
    try {
      read = await client.tracked('events', url, (deadline) => {
        // One controller for the client's deadline and its leaving (AbortSignal.any's signals may be collected early).
        const either = new AbortController();
        for (const signal of [deadline, options.leave]) signal?.addEventListener('abort', () => either.abort(), { once: true });
        if (options.leave?.aborted) either.abort();
        return readEventStream(
          url,
          { headers },
          { dropAfter: attempt === 0 && options.dropFirst ? 1 : Infinity, leaveAfter: options.leaveAfter, signal: either.signal },
        );
      });
    } catch {
      if (options.leave?.aborted) {
        subscription.ended = 'left';
        break;
      }
      client.ledger.dropped += 1;
      await client.pauseAfter(undefined, attempt);
      continue;
    }
    client.record('events', url, read.status, read.headers, read.text, startedAt);
    if (read.status !== 200) {
      if (read.status === 204 || read.status === 404) break;
      await client.pauseAfter(read.headers, attempt);
      continue;
    }
    subscription.events.push(...read.events.filter((event) => event.event !== 'resume'));
    const last = subscription.events.at(-1);
    if (last && last.event === 'status' && FINAL_STATUSES.has((last.data as { status: string }).status)) {
      subscription.ended = 'final';
      break;
    }
    if (read.left) {
      subscription.ended = 'left';
      break;
    }
  }
  context.record.subscriptions.push(subscription);
  return subscription;
}

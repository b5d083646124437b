import type { Caller } from '#shared/access.ts';
import { NotFoundError, ValidationError } from '#shared/errors.ts';
import { STREAM_POLL_FIRST_MS } from '#shared/limits.ts';
import type { PendingApproval } from './execution-model.ts';
import { FINAL_STATUSES, isComplete, type NumberedStreamEvent } from './stream-events.ts';
import type { StreamEventsRepository } from './stream-events-repository.ts';
import { nextPollPause } from './tail-pace.ts';

/** One server-sent event: `id` is the log id it comes from (none for the `resume` notice, which is not in the log). */
export interface StreamedEvent {
  id?: number;
  event: string;
  data: unknown;
}

export interface TailDeps {
  events: StreamEventsRepository;
  now: () => number;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface TailOptions {
  /** The last id the client has: the stream sends what follows it. */
  after: number;
  /** The caller went away: stop reading at once. */
  signal: AbortSignal;
  /** When the stream must end (before the platform ends it). */
  deadlineMs: number;
}

/** Why a stream stopped, for the transport: `deadline` means a `resume` notice is due. */
export type StreamEnd = 'finished' | 'deadline' | 'gone';

/**
 * The streaming routes read the log only, so the log's first batch says whose execution it is: another project's execution,
 * and an execution started before executions had logs, are answered as missing.
 */
export async function assertLogOwner(deps: Pick<TailDeps, 'events'>, caller: Caller, executionId: string): Promise<void> {
  if ((await deps.events.owner(executionId)) !== caller.projectId) throw new NotFoundError(`Execution ${executionId} not found`);
}

/**
 * `/stream` and `/executions/{id}/stream`: the log's events as they are, from `after` on, until a `complete`
 * (the execution finished, or paused at an approval: a resume after that `complete` waits for the decision).
 */
export async function* executionStream(
  deps: TailDeps,
  executionId: string,
  options: TailOptions,
): AsyncGenerator<StreamedEvent, StreamEnd> {
  const tail = tailLog(deps, executionId, options);
  for (;;) {
    const next = await tail.next();
    if (next.done) return next.value;
    for (const event of next.value.events) {
      yield { id: event.id, event: event.type, data: event.data };
      if (isComplete(event)) {
        await tail.return('finished');
        return 'finished';
      }
    }
  }
}

/**
 * `/executions/{id}/events`, subscribe-then-fetch: the first event (without `after`) is the execution's state as the
 * log says now; then `status` at each change (with `pending_approval` while waiting) and `decision` for each
 * approval answered, until the final status. It reads the log from the start (the state needs the ids in
 * `start`), sending only what follows `after`.
 */
export async function* lifecycleStream(
  deps: TailDeps,
  executionId: string,
  options: TailOptions,
): AsyncGenerator<StreamedEvent, StreamEnd> {
  const state = initialState(executionId);
  const tail = tailLog(deps, executionId, { ...options, after: 0 });
  let snapshotDue = options.after === 0;
  for (;;) {
    const next = await tail.next();
    if (next.done) return next.value;
    const { events, caughtUp } = next.value;
    for (const event of events) {
      const lifecycle = lifecycleEventOf(event, state);
      if (snapshotDue || !lifecycle || event.id <= options.after) continue;
      yield lifecycle;
      if (isSettledStatus(lifecycle)) return finish(tail);
    }
    if (snapshotDue && caughtUp) {
      snapshotDue = false;
      const snapshot: StreamedEvent = { id: state.lastId, event: 'status', data: statusOf(state) };
      yield snapshot;
      if (isSettledStatus(snapshot)) return finish(tail);
    }
  }
}

async function finish(tail: AsyncGenerator<unknown, StreamEnd>): Promise<StreamEnd> {
  await tail.return('finished');
  return 'finished';
}

interface LifecycleState {
  execution_id: string;
  workflow_id: string | null;
  thread_id: string | null;
  status: string;
  output: unknown;
  error: string | null;
  pending_approval: PendingApproval | null;
  lastId: number;
}

function initialState(executionId: string): LifecycleState {
  return {
    execution_id: executionId,
    workflow_id: null,
    thread_id: null,
    status: 'queued',
    output: null,
    error: null,
    pending_approval: null,
    lastId: 0,
  };
}

const statusOf = ({ lastId: _lastId, ...state }: LifecycleState) => ({ ...state });

const isSettledStatus = (event: StreamedEvent) =>
  event.event === 'status' && FINAL_STATUSES.includes((event.data as { status: LifecycleState['status'] }).status as never);

/** Folds one log event into the state; answers the subscription event it makes, if any. */
function lifecycleEventOf(event: NumberedStreamEvent, state: LifecycleState): StreamedEvent | undefined {
  state.lastId = event.id;
  const data = event.data;
  if (event.type === 'start') {
    Object.assign(state, { workflow_id: data.workflow_id ?? null, thread_id: data.thread_id ?? null, status: 'running' });
    return { id: event.id, event: 'status', data: statusOf(state) };
  }
  if (event.type === 'node_update' && data.type === 'approval' && (data.status === 'approved' || data.status === 'rejected')) {
    Object.assign(state, { status: 'running', pending_approval: null });
    return {
      id: event.id,
      event: 'decision',
      data: {
        execution_id: state.execution_id,
        approval_id: data.approval_id,
        node_id: data.node_id,
        decision: data.status,
        feedback: data.feedback,
        status: 'running',
      },
    };
  }
  if (isComplete(event)) {
    Object.assign(state, {
      status: event.data.status,
      output: event.data.output ?? null,
      error: event.data.error ?? null,
      pending_approval: event.data.pending_approval ?? null,
    });
    return { id: event.id, event: 'status', data: statusOf(state) };
  }
  return undefined;
}

interface TailChunk {
  events: NumberedStreamEvent[];
  /** Nothing more is in the log right now (the read that gave these found the end). */
  caughtUp: boolean;
}

/**
 * Follows an execution's log from `after`: one strongly consistent Query per poll, soon again after new events,
 * backing off while nothing comes, the longer the silence (and further while the execution waits: tail-pace.ts),
 * ending at the log's end, the deadline, or when the caller goes away.
 */
async function* tailLog(deps: TailDeps, executionId: string, options: TailOptions): AsyncGenerator<TailChunk, StreamEnd> {
  const holding = options.after === 0 ? undefined : await deps.events.batchHolding(executionId, options.after);
  let afterFirstId = options.after === 0 ? 0 : (holding?.firstId ?? 1) - 1;
  let delivered = options.after;
  let pause = STREAM_POLL_FIRST_MS;
  // A stream resumed after a pause's event (an approval's `complete`, a wait) knows at once that nothing comes soon.
  const resumedAt = holding?.events.find((event) => event.id === options.after);
  let waiting = resumedAt !== undefined && isWaiting(resumedAt);
  let quietSince = deps.now();
  for (;;) {
    if (options.signal.aborted) return 'gone';
    const { batches, more } = await deps.events.batchesAfter(executionId, afterFirstId);
    for (const [index, batch] of batches.entries()) {
      afterFirstId = batch.firstId;
      const fresh = batch.events.filter((event) => event.id > delivered);
      const caughtUp = !more && index === batches.length - 1;
      if (fresh.length > 0 || caughtUp) {
        delivered = fresh.at(-1)?.id ?? delivered;
        waiting = fresh.length > 0 ? isWaiting(fresh.at(-1)!) : waiting;
        yield { events: fresh, caughtUp };
      }
      if (batch.final) return 'finished';
    }
    if (batches.length === 0) yield { events: [], caughtUp: true };
    if (more) continue;
    if (options.signal.aborted) return 'gone';
    const left = options.deadlineMs - deps.now();
    if (left <= 0) return 'deadline';
    const fresh = batches.length > 0;
    if (fresh) quietSince = deps.now();
    pause = nextPollPause({ previousMs: pause, fresh, waiting, silentForMs: deps.now() - quietSince });
    await deps.sleep(Math.min(pause, left), options.signal);
  }
}

/**
 * Before a stream opens (its errors are still JSON answers): the id a client resumes after must be one the
 * log has given out; a larger one is the client's error (400), never a wait for ids that may never come.
 * Answers `ended` when the client already has the execution's last event: the log ended at its final `complete`
 * (completed, failed, cancelled; not an approval's pause) and that is the id it resumes after.
 */
export async function checkResumePoint(
  deps: Pick<TailDeps, 'events'>,
  executionId: string,
  after: number,
  field: ResumeField,
): Promise<'continues' | 'ended'> {
  if (after === 0) return 'continues';
  const holding = await deps.events.batchHolding(executionId, after);
  const lastId = holding ? holding.firstId + holding.events.length - 1 : 0;
  if (lastId < after) {
    throw new ValidationError([{ field, message: `is ${after}, but the last event of this execution is ${lastId}` }]);
  }
  // Nothing is ever appended after a final batch (stream-events.ts), so its last id is the log's last.
  return holding!.final && after === lastId ? 'ended' : 'continues';
}

/** Where a client gives the id it resumes after: the header EventSource sends, or the resume URL's query parameter. */
export type ResumeField = 'Last-Event-ID' | 'after';

/** The execution sleeps (a wait node, an approval): nothing comes for a while. */
function isWaiting(event: NumberedStreamEvent): boolean {
  return (event.type === 'node_update' && event.data.status === 'waiting') || (isComplete(event) && event.data.status === 'interrupted');
}

import { meterSubject, recordCost } from '#shared/metering/cost-meter.ts';
import type { InboundEvent } from '#inbound/event-schema.ts';
import { isLive, readBody, type StoredEvent } from '#inbound/stored-event.ts';
import type { Link } from '#inbound/link-model.ts';
import { NotFoundError } from '#shared/errors.ts';
import {
  COLLECTION_ATTEMPTS_PER_SWEEP,
  COLLECTION_CLAIM_LEASE_MS,
  COLLECTION_CONCURRENCY,
  COLLECTION_PAGE_SIZE,
  COLLECTION_RETRY_PAUSE_MS,
  COLLECTION_SWEEP_RETENTION_MS,
  MAX_DELIVERY_FAILURES_PER_EVENT,
} from '#shared/limits.ts';
import { logger } from '#shared/lambda/powertools.ts';
import { topLevelMemberText } from './raw-json.ts';
import type { CollectionRepository, CollectionTask, SweepCheckpoint, SweepSummary } from './collection-repository.ts';
import { normalizeCall, normalizeDialog, type NormalizedConversation, type Recording } from './conversation.ts';
import { givenBackBy, type QueueRepository } from './queue-repository.ts';

/** A recording that could not be fetched: the sender's problem, counted against the event. */
export class CollectionFailure extends Error {
  override readonly name = 'CollectionFailure';
  constructor(readonly reason: string) {
    super(reason);
  }
}

export interface CollectionDeps {
  tasks: CollectionRepository;
  links: { getLink(linkId: string): Promise<Link | undefined> };
  queue: QueueRepository;
  /** The bodies too large for their item (#inbound/stored-event.ts). */
  bodies: { get(key: string): Promise<Uint8Array> };
  /** Fetches a call's recording into the bucket; throws CollectionFailure for what counts against the event. */
  recordings: { fetch(url: string, key: string): Promise<{ bytes: number; sha256: string }> };
  /** Writes the normalized conversation and announces it. */
  handoffs: { handOff(conversation: NormalizedConversation, metadataJson?: string): Promise<void> };
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

/** `retry`: failed this sweep, queued for a later one; `abandoned`: failed for the last time. */
type Outcome = 'handed_off' | 'filtered' | 'skipped' | 'retry' | 'abandoned';

/**
 * One sweep of a task (functions/collection/README.md#nightly-collection): the events of the task's link received
 * before the sweep started, page by page through the `by_received` index, each filtered, fetched and handed off exactly once.
 * The sweep's checkpoint (cursor and counts) is saved after every page, so the same sweep started again (a retry,
 * a crash) resumes there and a finished one answers its summary without doing anything.
 */
export async function sweepTask(deps: CollectionDeps, taskId: string, sweepId: string): Promise<SweepSummary> {
  return (await collectUntil(deps, taskId, sweepId, Number.POSITIVE_INFINITY)).summary;
}

/**
 * As much of a sweep as fits before `deadlineMs`, after which no event starts: one CollectBatch invocation. `done`
 * false means the sweep saved its checkpoint and the state machine invokes it again. A page cut short by the deadline
 * is resumed after its last event started (events start in order, and every started one is finished first), so no
 * event is tried twice in a sweep and no count is lost or counted twice.
 */
export async function collectUntil(
  deps: CollectionDeps,
  taskId: string,
  sweepId: string,
  deadlineMs: number,
): Promise<{ done: boolean; summary: SweepSummary }> {
  const task = await deps.tasks.getTask(taskId);
  if (!task) throw new NotFoundError(`Task ${taskId} not found`);
  // Collection is the link's: its downloads, hand-offs and the CollectBatch and CollectMore transitions.
  meterSubject({ link: task.link_id });
  recordCost({ stateTransitions: 2 });
  const startedAtMs = deps.now();
  const startedAt = new Date(startedAtMs).toISOString();
  const sweep = await deps.tasks.openSweep(
    {
      task_id: taskId,
      sweep_id: sweepId,
      started_at: startedAt,
      finished_at: null,
      cutoff_key: `${startedAt}#`,
      cursor_key: '',
      handed_off: 0,
      failed: 0,
      filtered: 0,
      pending: 0,
    },
    startedAtMs + COLLECTION_SWEEP_RETENTION_MS,
  );
  if (sweep.finished_at) return { done: true, summary: summaryOf(sweep) };

  const link = await deps.links.getLink(task.link_id);
  // A webhook source has no history to fetch: a one-off task for a period collects nothing.
  if (task.kind === 'periodic' && link?.source_id) {
    for (;;) {
      const page = await deps.queue.page(link.source_id, sweep.cursor_key, sweep.cutoff_key, COLLECTION_PAGE_SIZE);
      const pastDeadline = () => deps.now() >= deadlineMs;
      const { outcomes, failure } = await mapBounded(
        page.events,
        COLLECTION_CONCURRENCY,
        (event) => collectEvent(deps, task, link, sweep, event),
        pastDeadline,
      );
      if (failure) {
        // What the page did before the failure stays counted: the retry skips those events (handed off, or given
        // back by this sweep), and resumes at the page's start for the rest. A filtered event stays queued, so the
        // retry meets it again and counts it then.
        tally(
          sweep,
          outcomes.filter((outcome) => outcome !== 'filtered'),
        );
        await deps.tasks
          .saveProgress(sweep)
          .catch((saveError: unknown) =>
            logger.error('could not save the counts of a failed batch', { taskId, sweepId, error: saveError as Error }),
          );
        throw failure.error;
      }
      tally(sweep, outcomes);
      if (outcomes.length < page.events.length) {
        sweep.cursor_key = page.events[outcomes.length - 1]?.received_key ?? sweep.cursor_key;
        await deps.tasks.saveProgress(sweep);
        return { done: false, summary: summaryOf(sweep) };
      }
      sweep.cursor_key = page.lastKey ?? sweep.cutoff_key;
      if (!page.lastKey) break;
      await deps.tasks.saveProgress(sweep);
      if (pastDeadline()) return { done: false, summary: summaryOf(sweep) };
    }
  }
  sweep.finished_at = new Date(deps.now()).toISOString();
  await deps.tasks.saveProgress(sweep);
  const summary = summaryOf(sweep);
  await deps.tasks.recordLastSweep(summary);
  return { done: true, summary };
}

/** `failed` counts every event that failed this sweep; `pending` those of them a later sweep tries again. */
function tally(sweep: SweepCheckpoint, outcomes: readonly (Outcome | undefined)[]): void {
  for (const outcome of outcomes) {
    if (outcome === 'handed_off' || outcome === 'filtered') sweep[outcome] += 1;
    if (outcome === 'retry' || outcome === 'abandoned') sweep.failed += 1;
    if (outcome === 'retry') sweep.pending += 1;
  }
}

function summaryOf(sweep: SweepCheckpoint): SweepSummary {
  const { cutoff_key: _cutoff, cursor_key: _cursor, ...summary } = sweep;
  return summary;
}

async function collectEvent(
  deps: CollectionDeps,
  task: CollectionTask,
  link: Link,
  sweep: SweepCheckpoint,
  ref: Pick<StoredEvent, 'source_id' | 'external_id'>,
): Promise<Outcome> {
  const event = await deps.queue.get(ref);
  // Expired (30 days, TTL deletes late), or taken meanwhile by another sweep.
  if (!event || !isLive(event, deps.now()) || (event.state !== 'queued' && event.state !== 'handing')) return 'skipped';
  // Every task's nightly sweep has the same sweep id: the task names the sweep too, so two tasks of a link never share a claim.
  const sweepKey = `${task.task_id}/${sweep.sweep_id}`;
  // Given back by this very sweep before a batch failed: its tries this sweep are spent and counted.
  if (event.state === 'queued' && givenBackBy(event, sweepKey)) return 'skipped';
  if (!passesFilters(task, event)) return 'filtered';
  if (!(await deps.queue.claim(event, sweepKey, deps.now(), COLLECTION_CLAIM_LEASE_MS))) return 'skipped';

  const previousFailures = event.delivery_failures ?? 0;
  // Each failure counts; the fifth in all is the last try.
  const attempts = Math.min(COLLECTION_ATTEMPTS_PER_SWEEP, MAX_DELIVERY_FAILURES_PER_EVENT - previousFailures);
  let sent: SentEvent | undefined;
  let failures = 0;
  let reason = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      sent ??= await readSent(deps, event);
      await deps.handoffs.handOff(await normalize(deps, link, event, sent.event), sent.metadataJson);
      // A sweep whose claim went stale and was taken over leaves the count to the sweep that holds it now.
      return (await deps.queue.handedOff(event, sweepKey, new Date(deps.now()).toISOString())) ? 'handed_off' : 'skipped';
    } catch (error) {
      if (!(error instanceof CollectionFailure)) throw error;
      failures += 1;
      reason = error.reason;
      if (attempt < attempts) await deps.sleep(COLLECTION_RETRY_PAUSE_MS);
    }
  }
  const abandon = previousFailures + failures >= MAX_DELIVERY_FAILURES_PER_EVENT;
  await deps.queue.release(event, sweepKey, { reason, abandon, failures });
  logger.warn('event not collected', { sourceId: event.source_id, eventId: event.event_id, reason, abandoned: abandon });
  return abandon ? 'abandoned' : 'retry';
}

/** Channel uses `source_channel`; Direction uses `metadata.direction` (calls). An empty filter lets everything through. */
function passesFilters(task: CollectionTask, event: StoredEvent): boolean {
  if (task.channels.length > 0 && !task.channels.includes(event.source_channel ?? '')) return false;
  if (task.directions.length > 0 && !task.directions.includes(event.direction ?? '')) return false;
  return true;
}

/**
 * The event as accepted and its metadata's source text (handed on as written). What the stored bytes themselves hold
 * is the event's own problem: counted against it like a failed download, so one such event cannot stop its task night
 * after night. Reading the bucket can fail for the platform's reasons (and a missing object reads as AccessDenied, as
 * an IAM fault does): that fails the sweep, loudly.
 */
async function readSent(deps: CollectionDeps, event: StoredEvent): Promise<SentEvent> {
  const read = await readBody(deps.bodies, event);
  if (!read.ok) throw new CollectionFailure(read.problem);
  return { event: read.event, metadataJson: topLevelMemberText(read.text, 'metadata') };
}

interface SentEvent {
  event: InboundEvent;
  /** The metadata's source text in the body as received. */
  metadataJson?: string;
}

async function normalize(deps: CollectionDeps, link: Link, event: StoredEvent, sent: InboundEvent): Promise<NormalizedConversation> {
  const ids = { event_id: Number(event.event_id), source_id: event.source_id, link_id: link.link_id };
  if (sent.type === 'text') return normalizeDialog(ids, sent);
  const key = `recordings/${event.source_id}/${event.event_id}.${sent.audio.format}`;
  const fetched = await deps.recordings.fetch(sent.audio.url, key);
  const recording: Recording = { key, bytes: fetched.bytes, sha256: fetched.sha256, format: sent.audio.format };
  return normalizeCall(ids, sent, recording);
}

/**
 * Runs `work` over `items` in their order, at most `limit` at a time, and answers the results of those it started:
 * all of them, or a first part once `stopStarting` holds (each started one is finished first). After a failure no
 * new item starts, and the failure is answered once the items in flight are done (nothing keeps working after the
 * sweep reported failing), with the results of those that finished (the failed one's place is empty).
 */
async function mapBounded<Item, Result>(
  items: readonly Item[],
  limit: number,
  work: (item: Item) => Promise<Result>,
  stopStarting: () => boolean,
): Promise<{ outcomes: (Result | undefined)[]; failure?: { error: unknown } }> {
  const results: (Result | undefined)[] = new Array<Result | undefined>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      // The first item always starts: a batch whose deadline had already passed still moves the sweep on.
      while (!failure && next < items.length && !(next > 0 && stopStarting())) {
        const index = next++;
        try {
          results[index] = await work(items[index]!);
        } catch (error) {
          failure ??= { error };
        }
      }
    }),
  );
  return { outcomes: results.slice(0, next), failure };
}

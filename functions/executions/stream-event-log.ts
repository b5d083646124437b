import { EXECUTION_RETENTION_MS, STREAM_EVENT_FLUSH_INTERVAL_MS } from '#shared/limits.ts';
import { FINAL_STATUSES, isFinalComplete, settledEvents, type StreamEvent } from './stream-events.ts';
import type { LogTail, StreamEventsRepository } from './stream-events-repository.ts';
import type { ExecutionRecord } from './execution-model.ts';

/** Writers that lose the race for the same ids this many times in a row give up (each loss means another writer moved on). */
const MAX_APPEND_ATTEMPTS = 8;

type AppendOutcome = 'appended' | 'closed';

export interface StreamEventAppender {
  /** Appends in order at the end of the log; 'closed' (and nothing written) once the log has its final `complete`. */
  append(events: readonly StreamEvent[]): Promise<AppendOutcome>;
}

/**
 * One writer's view of an execution's log. It remembers where its last batch ended, so a writer alone on the log
 * (the step function, nearly always) pays one write per batch and one read per invocation; a lost race
 * (a stop appending `complete` meanwhile) costs a read of the new end.
 */
export function streamEventAppender(
  repository: StreamEventsRepository,
  executionId: string,
  options: { projectId?: string; now: () => number; expectedTail?: LogTail },
): StreamEventAppender {
  // A writer that knows where the log should end (the first step: execute wrote `start` alone) tries that first;
  // its batch is a conditional put, so a wrong guess costs a read of the real end, as a lost race does.
  let tail: LogTail | undefined = options.expectedTail;
  return {
    async append(events) {
      const finalAt = events.findIndex(isFinalComplete);
      const batch = finalAt === -1 ? events : events.slice(0, finalAt + 1);
      if (batch.length === 0) return 'appended';
      for (let attempt = 0; attempt < MAX_APPEND_ATTEMPTS; attempt++) {
        tail ??= await repository.tail(executionId);
        if (tail.final) return 'closed';
        const firstId = tail.lastId + 1;
        const final = finalAt !== -1;
        const written = await repository.putBatch(executionId, firstId, batch, {
          final,
          projectId: firstId === 1 ? options.projectId : undefined,
          expiresAtMs: options.now() + EXECUTION_RETENTION_MS,
        });
        if (written) {
          tail = { lastId: firstId + batch.length - 1, final };
          return 'appended';
        }
        tail = undefined;
      }
      throw new Error(`Could not append to the event log of ${executionId}: ${MAX_APPEND_ATTEMPTS} writers got there first`);
    },
  };
}

/**
 * Makes the log end the way the record says: appends the settled events of a finished record unless the log
 * already ended. Safe to repeat, so every path that may see a finished run without its final event (a stop
 * answered 409, the execution-ended reconciler, a retried step) can call it.
 */
export async function endLogAsRecorded(
  appender: StreamEventAppender,
  record: Pick<ExecutionRecord, 'execution_id' | 'status' | 'output' | 'error' | 'pending_approval'>,
): Promise<void> {
  if (FINAL_STATUSES.includes(record.status)) await appender.append(settledEvents(record));
}

/**
 * The step function's buffer: events go out in batches, at most one write per STREAM_EVENT_FLUSH_INTERVAL_MS while a
 * model generates. The first event after a quiet spell goes at once (a fast first token); later ones wait for the
 * interval. `node_update` rides along with the next batch instead of forcing one. `flush` (at the end of a step)
 * writes what is left and reports a failed background write, so a step never ends with events unwritten.
 */
export interface StreamEventBuffer {
  push(event: StreamEvent): void;
  flush(): Promise<AppendOutcome>;
}

export function streamEventBuffer(appender: StreamEventAppender, options: { now: () => number; intervalMs?: number }): StreamEventBuffer {
  const intervalMs = options.intervalMs ?? STREAM_EVENT_FLUSH_INTERVAL_MS;
  let pending: StreamEvent[] = [];
  let lastWriteAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<AppendOutcome> = Promise.resolve('appended');
  let failure: unknown;

  const write = (): Promise<AppendOutcome> => {
    clearTimeout(timer);
    timer = undefined;
    const batch = pending;
    pending = [];
    if (batch.length > 0) lastWriteAt = options.now();
    writing = writing.then(async (previous) => (batch.length === 0 || previous === 'closed' ? previous : appender.append(batch)));
    writing.catch((error: unknown) => (failure ??= error));
    return writing;
  };

  return {
    push(event) {
      pending.push(event);
      if (event.type === 'node_update' || timer) return;
      const wait = lastWriteAt + intervalMs - options.now();
      if (wait <= 0) void write().catch(() => undefined);
      else timer = setTimeout(() => void write().catch(() => undefined), wait);
    },
    async flush() {
      const outcome = await write();
      if (failure) throw failure as Error;
      return outcome;
    },
  };
}

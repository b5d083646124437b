import type { LogTail, StreamEventBatch, StreamEventsRepository } from '#executions/stream-events-repository.ts';
import type { NumberedStreamEvent, StreamEvent } from '#executions/stream-events.ts';
import { Faults } from './faults.ts';

interface StoredBatch extends StreamEventBatch {
  projectId?: string;
}

/** The stream events table in memory, with the repository's contract: a batch never replaces one starting at the same id. */
export class InMemoryStreamEventsRepository implements StreamEventsRepository {
  readonly logs = new Map<string, StoredBatch[]>();
  readonly faults = new Faults<keyof StreamEventsRepository>();

  async tail(executionId: string): Promise<LogTail> {
    await this.faults.enter('tail');
    const last = this.batchesOf(executionId).at(-1);
    return last ? { lastId: last.firstId + last.events.length - 1, final: last.final } : { lastId: 0, final: false };
  }

  async putBatch(
    executionId: string,
    firstId: number,
    events: readonly StreamEvent[],
    options: { final: boolean; projectId?: string; expiresAtMs: number },
  ): Promise<boolean> {
    await this.faults.enter('putBatch');
    const batches = this.batchesOf(executionId);
    if (batches.some((batch) => batch.firstId === firstId)) return false;
    const numbered = events.map((event, index) => ({ ...structuredClone(event), id: firstId + index }));
    batches.push({ firstId, events: numbered, final: options.final, projectId: options.projectId });
    batches.sort((a, b) => a.firstId - b.firstId);
    this.logs.set(executionId, batches);
    return true;
  }

  async owner(executionId: string): Promise<string | undefined> {
    await this.faults.enter('owner');
    return this.batchesOf(executionId).find((batch) => batch.firstId === 1)?.projectId;
  }

  async batchHolding(executionId: string, id: number): Promise<StreamEventBatch | undefined> {
    await this.faults.enter('batchHolding');
    return this.batchesOf(executionId)
      .filter((batch) => batch.firstId <= id)
      .at(-1);
  }

  async batchesAfter(executionId: string, afterFirstId: number): Promise<{ batches: StreamEventBatch[]; more: boolean }> {
    await this.faults.enter('batchesAfter');
    return { batches: this.batchesOf(executionId).filter((batch) => batch.firstId > afterFirstId), more: false };
  }

  /** Every event of an execution's log, in id order. */
  eventsOf(executionId: string): NumberedStreamEvent[] {
    return this.batchesOf(executionId).flatMap((batch) => batch.events);
  }

  private batchesOf(executionId: string): StoredBatch[] {
    return this.logs.get(executionId) ?? [];
  }
}

import type { UserStateRepository, Turn } from '#executions/user-state-repository.ts';
import { Faults } from './faults.ts';

/** The user state table in memory: memory per (project, user), turns per (project, user, thread). */
export class InMemoryUserStateRepository implements UserStateRepository {
  readonly memory = new Map<string, Map<string, unknown>>();
  readonly turns = new Map<string, { turn: Turn; sequence: number; expiresAtMs: number }[]>();
  readonly faults = new Faults<keyof UserStateRepository>();

  async readMemory(projectId: string, userId: string): Promise<Record<string, unknown>> {
    await this.faults.enter('readMemory');
    const memory: Record<string, unknown> = Object.create(null);
    for (const [name, value] of this.memory.get(JSON.stringify([projectId, userId])) ?? []) memory[name] = structuredClone(value);
    return memory;
  }

  async writeMemory(projectId: string, userId: string, entries: Record<string, unknown>): Promise<void> {
    await this.faults.enter('writeMemory');
    const key = JSON.stringify([projectId, userId]);
    const memory = this.memory.get(key) ?? new Map<string, unknown>();
    for (const [name, value] of Object.entries(entries)) memory.set(name, JSON.parse(JSON.stringify(value ?? null)));
    this.memory.set(key, memory);
  }

  async readHistory(
    projectId: string,
    userId: string,
    threadId: string,
    limit: number,
    execution: { executionId: string; startedAt?: string },
  ): Promise<Turn[]> {
    await this.faults.enter('readHistory');
    const turns = this.turns.get(JSON.stringify([projectId, userId, threadId])) ?? [];
    return turns
      .filter(
        ({ turn }) => turn.execution_id !== execution.executionId && (execution.startedAt === undefined || turn.at < execution.startedAt),
      )
      .sort((a, b) => a.turn.at.localeCompare(b.turn.at) || a.sequence - b.sequence)
      .slice(-limit)
      .map(({ turn }) => structuredClone(turn));
  }

  async appendTurn(projectId: string, userId: string, threadId: string, turn: Turn, sequence: number, expiresAtMs: number): Promise<void> {
    await this.faults.enter('appendTurn');
    const key = JSON.stringify([projectId, userId, threadId]);
    // A turn's item key is (at, execution, sequence): writing it again replaces it, as PutItem does.
    const others = (this.turns.get(key) ?? []).filter((stored) => !sameTurnKey(stored, turn, sequence));
    this.turns.set(key, [...others, { turn: structuredClone(turn), sequence, expiresAtMs }]);
  }

  async removeTurn(projectId: string, userId: string, threadId: string, turn: Turn, sequence: number): Promise<void> {
    await this.faults.enter('removeTurn');
    const key = JSON.stringify([projectId, userId, threadId]);
    const kept = (this.turns.get(key) ?? []).filter((stored) => !sameTurnKey(stored, turn, sequence));
    this.turns.set(key, kept);
  }

  /** Test helper: the turns of a thread, oldest first, with their sequence numbers. */
  threadOf(projectId: string, userId: string, threadId: string): (Turn & { sequence: number })[] {
    return (this.turns.get(JSON.stringify([projectId, userId, threadId])) ?? []).map(({ turn, sequence }) => ({ ...turn, sequence }));
  }

  /** Test helper: a user's memory as a plain object. */
  memoryOf(projectId: string, userId: string): Record<string, unknown> {
    return Object.fromEntries(this.memory.get(JSON.stringify([projectId, userId])) ?? []);
  }
}

const sameTurnKey = (stored: { turn: Turn; sequence: number }, turn: Turn, sequence: number) =>
  stored.turn.at === turn.at && stored.turn.execution_id === turn.execution_id && stored.sequence === sequence;

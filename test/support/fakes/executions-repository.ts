import type { ExecutionRecord, ExecutionStatus } from '#executions/execution-model.ts';
import type { ExecutionsRepository } from '#executions/executions-repository.ts';
import { conditionFailed, Faults } from './faults.ts';

type Condition = Parameters<ExecutionsRepository['transition']>[3];

/**
 * The executions table in memory, with the repository's contract: `create` refuses an existing id, `transition`
 * applies its changes only while the status is one of `from` and the extra condition holds, and answers the
 * record as it was before (undefined when the condition did not hold). Conditions are evaluated for the forms
 * the product writes (`a.b = :value`, joined with AND); any other form fails the test loudly.
 */
export class InMemoryExecutionsRepository implements ExecutionsRepository {
  readonly items = new Map<string, { record: ExecutionRecord; expiresAtMs: number }>();
  readonly faults = new Faults<keyof ExecutionsRepository>();

  async create(record: ExecutionRecord, expiresAtMs: number): Promise<void> {
    await this.faults.enter('create');
    if (this.items.has(record.execution_id)) throw conditionFailed();
    this.items.set(record.execution_id, { record: structuredClone(record), expiresAtMs });
  }

  async get(executionId: string, _consistent = false): Promise<ExecutionRecord | undefined> {
    await this.faults.enter('get');
    const item = this.items.get(executionId);
    return item ? structuredClone(item.record) : undefined;
  }

  async transition(
    executionId: string,
    from: readonly ExecutionStatus[],
    changes: Partial<ExecutionRecord>,
    condition?: Condition,
  ): Promise<ExecutionRecord | undefined> {
    await this.faults.enter('transition');
    const item = this.items.get(executionId);
    if (!item || !from.includes(item.record.status) || (condition && !conditionHolds(item.record, condition))) return undefined;
    const previous = structuredClone(item.record);
    for (const [field, value] of Object.entries(changes)) {
      if (value !== undefined) (item.record as unknown as Record<string, unknown>)[field] = structuredClone(value);
    }
    return previous;
  }

  async setCallbackState(executionId: string, state: ExecutionRecord['callback_state']): Promise<void> {
    await this.faults.enter('setCallbackState');
    const item = this.items.get(executionId);
    // An unconditional UpdateItem: on a missing key DynamoDB creates an item holding just this attribute.
    if (!item) {
      this.items.set(executionId, { record: { execution_id: executionId, callback_state: state } as ExecutionRecord, expiresAtMs: 0 });
      return;
    }
    item.record.callback_state = state;
  }

  /** Test helper: puts a record as it would be mid-run (no checks), answering it. */
  seed(record: ExecutionRecord, expiresAtMs = Number.MAX_SAFE_INTEGER): ExecutionRecord {
    this.items.set(record.execution_id, { record: structuredClone(record), expiresAtMs });
    return record;
  }

  /** Test helper: the stored record, as a copy; throws when there is none. */
  stored(executionId: string): ExecutionRecord {
    const item = this.items.get(executionId);
    if (!item) throw new Error(`no execution ${executionId} in the fake executions table`);
    return structuredClone(item.record);
  }

  /** Test helper: every stored record. */
  all(): ExecutionRecord[] {
    return [...this.items.values()].map((item) => structuredClone(item.record));
  }
}

function conditionHolds(record: ExecutionRecord, condition: NonNullable<Condition>): boolean {
  return condition.expression.split(/\s+AND\s+/).every((clause) => {
    const match = /^\s*\(?\s*([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)\s*=\s*(:\w+)\s*\)?\s*$/.exec(clause);
    if (!match) throw new Error(`the fake executions repository cannot evaluate the condition "${clause}"`);
    const [, path, placeholder] = match as unknown as [string, string, string];
    if (!Object.hasOwn(condition.values, placeholder)) throw new Error(`condition value ${placeholder} is missing`);
    const actual = path.split('.').reduce<unknown>((value, name) => (value as Record<string, unknown> | null | undefined)?.[name], record);
    return actual === condition.values[placeholder];
  });
}

import type { ExecutionRecord, ExecutionStatus } from '#executions/execution-model.ts';
import type { ExecutionsRepository } from '#executions/executions-repository.ts';
import { conditionFailed, Faults } from './faults.ts';

type Condition = Parameters<ExecutionsRepository['transition']>[3];

/**
 * The executions table in memory, with the repository's contract: `create` refuses an existing id, `transition`
 * applies its changes only while the status is one of `from` and the extra condition holds, and answers the
 * record as it was before (undefined when the condition did not hold). Conditions are evaluated for the forms
 * the product writes (`a.b = :value`, `a <= :value`, `attribute_not_exists`, `attribute_type`, joined with AND and
 * OR); any other form fails the test loudly.
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
  const stripped = (text: string) =>
    text
      .trim()
      .replace(/^\((.*)\)$/, '$1')
      .trim();
  return condition.expression.split(/\s+AND\s+/).every((clause) =>
    stripped(clause)
      .split(/\s+OR\s+/)
      .some((term) => termHolds(record, stripped(term), condition.values)),
  );
}

const PATH = '([A-Za-z_][\\w]*(?:\\.[A-Za-z_][\\w]*)*)';
const COMPARISON = new RegExp(`^${PATH}\\s*(=|<=)\\s*(:\\w+)$`);
const FUNCTION = new RegExp(`^(attribute_not_exists|attribute_type)\\(\\s*${PATH}\\s*(?:,\\s*(:\\w+)\\s*)?\\)$`);

/** DynamoDB's types for `attribute_type`, as the document client writes the record's values. */
const TYPE_OF: Record<string, (value: unknown) => boolean> = {
  NULL: (value) => value === null,
  N: (value) => typeof value === 'number',
  S: (value) => typeof value === 'string',
};

/**
 * One term of the forms the product writes: `a.b = :v`, `a <= :v`, `attribute_not_exists(a)`, `attribute_type(a, :t)`, as
 * DynamoDB evaluates them (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.OperatorsAndFunctions.html).
 */
function termHolds(record: ExecutionRecord, term: string, values: Record<string, unknown>): boolean {
  const valueOf = (placeholder: string) => {
    if (!Object.hasOwn(values, placeholder)) throw new Error(`condition value ${placeholder} is missing`);
    return values[placeholder];
  };
  const at = (path: string) =>
    path.split('.').reduce<unknown>((value, name) => (value as Record<string, unknown> | null | undefined)?.[name], record);
  const comparison = COMPARISON.exec(term);
  if (comparison) {
    const [, path, operator, placeholder] = comparison as unknown as [string, string, string, string];
    const actual = at(path);
    const expected = valueOf(placeholder);
    // A comparison with an absent attribute, or one of another type, is false in DynamoDB.
    if (operator === '<=') return typeof actual === 'number' && typeof expected === 'number' && actual <= expected;
    return actual === expected;
  }
  const call = FUNCTION.exec(term);
  if (call) {
    const [, name, path, placeholder] = call as unknown as [string, string, string, string | undefined];
    if (name === 'attribute_not_exists') return at(path) === undefined;
    const type = TYPE_OF[String(valueOf(placeholder ?? ''))];
    if (!type) throw new Error(`the fake executions repository knows no attribute type ${String(valueOf(placeholder ?? ''))}`);
    return at(path) !== undefined && type(at(path));
  }
  throw new Error(`the fake executions repository cannot evaluate the condition "${term}"`);
}

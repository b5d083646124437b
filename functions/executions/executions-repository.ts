import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ifConditionHolds } from '#shared/store/conditional-write.ts';
import { allStoredItems } from '#shared/store/paginate.ts';
import { MAX_EXECUTION_RESULT_BYTES, EXECUTION_VALUE_INLINE_MAX_BYTES } from '#shared/limits.ts';
import type { ExecutionRecord, ExecutionStatus, PendingApproval, ExecutionCostUnits } from './execution-model.ts';
import { executionObjectKey, type ExecutionValues } from './execution-values.ts';
import { ttlSeconds } from '#shared/time.ts';

const key = (executionId: string) => ({ pk: `execution#${executionId}` });

/**
 * How the three values that can be large are kept in the `execution#<id>` item (they are never inline
 * over EXECUTION_VALUE_INLINE_MAX_BYTES, so the item stays a few KB and every poll and transition stays cheap):
 * - `output`: JSON text in `output_json`, or the object key in `output_s3` (`executions/<id>/output.json`);
 * - `error`: the text in `error`, or null and the key in `error_s3`;
 * - `pending_approval.message`: inline, or null and the key in `pending_approval.message_s3`.
 */
interface StoredPending {
  approval_id: string;
  node_id: string;
  message: string | null;
  message_s3?: string;
}

type StoredFields = Record<string, unknown>;

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/** Cuts an error text to MAX_EXECUTION_RESULT_BYTES; an error is for people, and its answer must fit a response. */
function boundedError(error: string): string {
  if (utf8Bytes(error) <= MAX_EXECUTION_RESULT_BYTES) return error;
  const note = ` … (cut from ${utf8Bytes(error)} bytes)`;
  const cut = Buffer.from(error, 'utf8')
    .subarray(0, MAX_EXECUTION_RESULT_BYTES - utf8Bytes(note))
    .toString('utf8');
  return `${cut.replace(/\uFFFD$/, '')}${note}`;
}

export type ExecutionsRepository = ReturnType<typeof createExecutionsRepository>;

/**
 * Executions table. Every status change is one conditional UpdateItem naming the statuses it may leave,
 * so a stop, an approval and the engine racing on one execution cannot overwrite each other's outcome.
 * Large values go to S3 before the write that points at them; `get` answers them whole.
 */
export function createExecutionsRepository(client: DynamoDBDocumentClient, tableName: string, values: ExecutionValues) {
  /** The stored attributes for the changed fields: `set` to write, `remove` to drop (the other form of a value). */
  async function encode(executionId: string, changes: Partial<ExecutionRecord>): Promise<{ set: StoredFields; remove: string[] }> {
    const set: StoredFields = {};
    const remove: string[] = [];
    for (const [field, value] of Object.entries(changes)) {
      if (value === undefined) continue;
      if (field === 'output') {
        const stored = await values.store(value, executionObjectKey(executionId, 'output'));
        if (stored.s3 === undefined) {
          set.output_json = stored.json;
          remove.push('output_s3');
        } else {
          set.output_s3 = stored.s3;
          remove.push('output_json');
        }
      } else if (field === 'error' && typeof value === 'string' && utf8Bytes(value) > EXECUTION_VALUE_INLINE_MAX_BYTES) {
        const stored = await values.store(boundedError(value), executionObjectKey(executionId, 'error'));
        set.error = null;
        set.error_s3 = stored.s3;
      } else if (field === 'error') {
        set.error = value;
        remove.push('error_s3');
      } else if (field === 'pending_approval' && value !== null) {
        const pending = value as PendingApproval;
        const stored: StoredPending = { approval_id: pending.approval_id, node_id: pending.node_id, message: pending.message };
        if (utf8Bytes(pending.message) > EXECUTION_VALUE_INLINE_MAX_BYTES) {
          const object = await values.store(pending.message, executionObjectKey(executionId, `approval-${pending.approval_id}`));
          Object.assign(stored, { message: null, message_s3: object.s3 });
        }
        set.pending_approval = stored;
      } else {
        set[field] = value;
      }
    }
    return { set, remove: remove.filter((name) => !(name in set)) };
  }

  /** The record from its item; `load` false leaves values kept in S3 unread (null), as in ALL_OLD answers. */
  async function decode(item: Record<string, unknown>, load: boolean): Promise<ExecutionRecord> {
    const { pk: _pk, expires_at: _expires, output_json, output_s3, error_s3, output: legacyOutput, ...rest } = item;
    const record = rest as unknown as ExecutionRecord;
    const stored = record.pending_approval as StoredPending | null | undefined;
    const [output, error, message] = await Promise.all([
      output_s3 !== undefined
        ? load
          ? values.load({ s3: output_s3 as string })
          : null
        : output_json !== undefined
          ? (JSON.parse(output_json as string) as unknown)
          : (legacyOutput ?? null),
      error_s3 !== undefined && load ? values.load({ s3: error_s3 as string }) : (record.error ?? null),
      // A pending approval is shown only while the execution is interrupted: its message is read only then.
      stored?.message_s3 !== undefined && load && record.status === 'interrupted'
        ? values.load({ s3: stored.message_s3 })
        : (stored?.message ?? ''),
    ]);
    record.output = output;
    record.error = error as string | null;
    record.pending_approval = stored ? { approval_id: stored.approval_id, message: message as string, node_id: stored.node_id } : null;
    return record;
  }

  return {
    async create(record: ExecutionRecord, expiresAtMs: number): Promise<void> {
      const { set } = await encode(record.execution_id, record);
      await client.send(
        new PutCommand({
          TableName: tableName,
          Item: { ...key(record.execution_id), ...set, expires_at: ttlSeconds(expiresAtMs) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    },

    /** The whole record: large values are read back from S3 (one GET each, only when present). */
    async get(executionId: string, consistent = false): Promise<ExecutionRecord | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: key(executionId), ConsistentRead: consistent }));
      return result.Item ? decode(result.Item, true) : undefined;
    },

    /**
     * Applies `changes` only while the status is one of `from` (and `condition` holds).
     * Answers the record as it was before (values kept in S3 not read: null), or undefined when the condition did not hold.
     */
    async transition(
      executionId: string,
      from: readonly ExecutionStatus[],
      changes: Partial<ExecutionRecord>,
      condition?: { expression: string; values: Record<string, unknown> },
    ): Promise<ExecutionRecord | undefined> {
      const { set, remove } = await encode(executionId, changes);
      const names: Record<string, string> = { '#status': 'status' };
      const expressionValues: Record<string, unknown> = {};
      from.forEach((status, i) => (expressionValues[`:from${i}`] = status));
      const sets: string[] = [];
      Object.entries(set).forEach(([field, value], i) => {
        names[`#f${i}`] = field;
        expressionValues[`:v${i}`] = value;
        sets.push(`#f${i} = :v${i}`);
      });
      const removes = remove.map((field, i) => {
        names[`#r${i}`] = field;
        return `#r${i}`;
      });
      Object.assign(expressionValues, condition?.values);
      const statusCondition = `#status IN (${from.map((_, i) => `:from${i}`).join(', ')})`;
      const result = await ifConditionHolds(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: key(executionId),
            UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
            ConditionExpression: condition ? `${statusCondition} AND (${condition.expression})` : statusCondition,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: expressionValues,
            ReturnValues: 'ALL_OLD',
          }),
        ),
      );
      return result?.Attributes ? decode(result.Attributes, false) : undefined;
    },

    async setCallbackState(executionId: string, state: ExecutionRecord['callback_state']): Promise<void> {
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: key(executionId),
          UpdateExpression: 'SET callback_state = :state',
          ExpressionAttributeValues: { ':state': state },
        }),
      );
    },
  };
}

/** What a finished execution's record keeps of its spending: whose workflow it ran, and the units its steps spent. */
export type ExecutionCost = Pick<ExecutionRecord, 'project_id' | 'workflow_id'> & { cost_units: ExecutionCostUnits };

/**
 * The executions table read across executions, for the operator's cost report. Apart from the repository above: it
 * reads no value kept in the bucket, so it needs no access to it, and nothing on the request path scans the table.
 */
export function createExecutionCostsRepository(client: DynamoDBDocumentClient, tableName: string) {
  return {
    /**
     * The status records of the executions that finished on the UTC days `from` to `to` (YYYY-MM-DD, both included)
     * and kept their costs, of one project or of all; a Scan, as reports are rare.
     */
    async finishedBetween(from: string, to: string, projectId?: string): Promise<ExecutionCost[]> {
      return allStoredItems<ExecutionCost>(client, {
        scan: {
          TableName: tableName,
          // `finished_at` is ISO 8601: a day's times sort between `<day>T` and `<day>T~`.
          FilterExpression:
            'attribute_exists(cost_units) AND finished_at BETWEEN :from AND :to' + (projectId ? ' AND project_id = :project' : ''),
          ExpressionAttributeValues: { ':from': `${from}T`, ':to': `${to}T~`, ...(projectId ? { ':project': projectId } : {}) },
          ProjectionExpression: 'cost_units, project_id, workflow_id',
        },
      });
    },
  };
}

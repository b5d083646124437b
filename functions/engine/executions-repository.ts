import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from '../shared/conditional-write.ts';
import type { ExecutionRecord, ExecutionStatus } from './execution-model.ts';

const key = (executionId: string) => ({ pk: `execution#${executionId}` });

export type ExecutionsRepository = ReturnType<typeof createExecutionsRepository>;

/**
 * Executions table. Every status change is one conditional UpdateItem naming the statuses it may leave,
 * so a stop, an approval and the engine racing on one execution cannot overwrite each other's outcome.
 */
export function createExecutionsRepository(client: DynamoDBDocumentClient, tableName: string) {
  return {
    async create(record: ExecutionRecord, expiresAtMs: number): Promise<void> {
      await client.send(
        new PutCommand({
          TableName: tableName,
          Item: { ...key(record.execution_id), ...record, expires_at: Math.ceil(expiresAtMs / 1000) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    },

    async get(executionId: string, consistent = false): Promise<ExecutionRecord | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: key(executionId), ConsistentRead: consistent }));
      return result.Item as ExecutionRecord | undefined;
    },

    /**
     * Applies `changes` only while the status is one of `from` (and `condition` holds).
     * Answers the record as it was before, or undefined when the condition did not hold.
     */
    async transition(
      executionId: string,
      from: readonly ExecutionStatus[],
      changes: Partial<ExecutionRecord>,
      condition?: { expression: string; values: Record<string, unknown> },
    ): Promise<ExecutionRecord | undefined> {
      const names: Record<string, string> = { '#status': 'status' };
      const values: Record<string, unknown> = {};
      from.forEach((status, i) => (values[`:from${i}`] = status));
      const sets: string[] = [];
      Object.entries(changes).forEach(([field, value], i) => {
        if (value === undefined) return;
        names[`#f${i}`] = field;
        values[`:v${i}`] = value;
        sets.push(`#f${i} = :v${i}`);
      });
      Object.assign(values, condition?.values);
      const statusCondition = `#status IN (${from.map((_, i) => `:from${i}`).join(', ')})`;
      try {
        const result = await client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: key(executionId),
            UpdateExpression: `SET ${sets.join(', ')}`,
            ConditionExpression: condition ? `${statusCondition} AND (${condition.expression})` : statusCondition,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValues: 'ALL_OLD',
          }),
        );
        return result.Attributes as ExecutionRecord;
      } catch (error) {
        if (isConditionFailure(error)) return undefined;
        throw error;
      }
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

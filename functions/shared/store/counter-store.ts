import { conditionHeld } from './conditional-write.ts';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ttlSeconds } from '../time.ts';

/**
 * Counters in the on-demand counters table: API keys' rate-limit windows, token-guessing counters, id blocks (a
 * link's limits live in its day item in the usage table: functions/inbound/link-limits.ts).
 * Each is a single-item atomic UpdateItem (no transactions: they cost double and the local store lacks them).
 * Items carry a TTL so finished windows clean themselves up.
 */
export interface CounterStore {
  /** Adds one unless the counter already reached `limit`; false means the limit is exhausted. */
  incrementBelow(key: string, limit: number, expiresAtMs: number): Promise<boolean>;
  /** Adds one and answers the new value. */
  increment(key: string, expiresAtMs: number): Promise<number>;
  read(key: string): Promise<number>;
}

const COUNT = 'count';

export function createCounterStore(client: DynamoDBDocumentClient, tableName: string): CounterStore {
  return {
    incrementBelow(key, limit, expiresAtMs) {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { pk: key },
            UpdateExpression: 'ADD #count :one SET expires_at = if_not_exists(expires_at, :expires)',
            ConditionExpression: 'attribute_not_exists(#count) OR #count < :limit',
            ExpressionAttributeNames: { '#count': COUNT },
            ExpressionAttributeValues: { ':one': 1, ':limit': limit, ':expires': ttlSeconds(expiresAtMs) },
          }),
        ),
      );
    },
    async increment(key, expiresAtMs) {
      const result = await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { pk: key },
          UpdateExpression: 'ADD #count :one SET expires_at = if_not_exists(expires_at, :expires)',
          ExpressionAttributeNames: { '#count': COUNT },
          ExpressionAttributeValues: { ':one': 1, ':expires': ttlSeconds(expiresAtMs) },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      return Number(result.Attributes?.[COUNT] ?? 0);
    },
    async read(key) {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: { pk: key } }));
      return Number(result.Item?.[COUNT] ?? 0);
    },
  };
}

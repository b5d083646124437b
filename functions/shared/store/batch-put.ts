import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { sendUntilProcessed, type BatchRetryOptions } from './batch-retry.ts';

const BATCH_WRITE_LIMIT = 25;

type PutRequest = { PutRequest: { Item: Record<string, unknown> } };

/**
 * Puts items 25 to a request. What DynamoDB leaves unprocessed (it does under throttling) is sent again with
 * exponential backoff and full jitter; still unprocessed after the last attempt, it throws BatchIncompleteError.
 * Earlier chunks stay written then: callers write items that are harmless alone (see their comments).
 */
export async function batchPut(
  client: DynamoDBDocumentClient,
  tableName: string,
  items: Record<string, unknown>[],
  options?: BatchRetryOptions,
): Promise<void> {
  for (let i = 0; i < items.length; i += BATCH_WRITE_LIMIT) {
    const requests: PutRequest[] = items.slice(i, i + BATCH_WRITE_LIMIT).map((Item) => ({ PutRequest: { Item } }));
    await sendUntilProcessed(
      'BatchWriteItem',
      requests,
      async (pending) => {
        const result = await client.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } }));
        const rest = (result.UnprocessedItems?.[tableName] ?? []) as PutRequest[];
        return rest.length > 0 ? { rest, count: rest.length } : undefined;
      },
      options,
    );
  }
}

import { BatchGetCommand, type BatchGetCommandInput, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { sendUntilProcessed, type BatchRetryOptions } from './batch-retry.ts';

type RequestItems = NonNullable<BatchGetCommandInput['RequestItems']>;
export type BatchGetResponses = Map<string, Record<string, unknown>[]>;

const keyCount = (items: RequestItems) => Object.values(items).reduce((sum, request) => sum + (request.Keys?.length ?? 0), 0);

/**
 * One BatchGetItem, with the keys DynamoDB leaves unprocessed (under throttling) asked again with exponential
 * backoff and full jitter. Answers every table's items, by table name; an item missing from the answer is
 * missing from the table. Keys still unprocessed after the last attempt throw BatchIncompleteError: a
 * caller never mistakes an unread item for an absent one.
 */
export async function batchGet(
  client: DynamoDBDocumentClient,
  requestItems: RequestItems,
  options?: BatchRetryOptions,
): Promise<BatchGetResponses> {
  const responses: BatchGetResponses = new Map();
  await sendUntilProcessed(
    'BatchGetItem',
    requestItems,
    async (pending) => {
      const result = await client.send(new BatchGetCommand({ RequestItems: pending }));
      for (const [table, items] of Object.entries(result.Responses ?? {})) {
        responses.set(table, [...(responses.get(table) ?? []), ...items]);
      }
      const rest = result.UnprocessedKeys ?? {};
      const count = keyCount(rest);
      return count > 0 ? { rest, count } : undefined;
    },
    options,
  );
  return responses;
}

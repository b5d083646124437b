import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * Hi/lo ids: each process reserves a block of `blockSize` ids with one atomic counter write and hands
 * them out from memory, so there is no counter item written on every request. Ids are unique across
 * every process and grow over time; a process that stops leaves the rest of its block unused.
 */
export function createIdAllocator(client: DynamoDBDocumentClient, tableName: string, sequenceName: string, blockSize: number) {
  let next = 0;
  let end = 0;
  let pendingBlock: Promise<void> | undefined;

  async function reserveBlock(): Promise<void> {
    const result = await client.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { pk: `sequence#${sequenceName}` },
        UpdateExpression: 'ADD blocks :one',
        ExpressionAttributeValues: { ':one': 1 },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    const block = Number(result.Attributes?.blocks);
    next = (block - 1) * blockSize + 1;
    end = block * blockSize + 1;
  }

  return async function nextId(): Promise<number> {
    while (next >= end) {
      // Concurrent callers in one process share one reservation instead of each burning a block.
      pendingBlock ??= reserveBlock().finally(() => (pendingBlock = undefined));
      await pendingBlock;
    }
    return next++;
  };
}

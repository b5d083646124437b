import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, paginateScan, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord, KeyHashItem, RetiredKeyHash } from './api-key-model.ts';
import { ttlSeconds } from '#shared/time.ts';

const recordKey = (keyId: string) => ({ pk: `keyid#${keyId}` });
const hashKey = (keyHash: string) => ({ pk: `key#${keyHash}` });

export type ApiKeysRepository = ReturnType<typeof createApiKeysRepository>;

export function createApiKeysRepository(client: DynamoDBDocumentClient, tableName: string) {
  const putHash = (keyHash: string, item: KeyHashItem) => {
    // TTL tidies items no request can use any more; the read side checks the times itself.
    const unusableAfterMs = item.valid_until_ms ?? item.key_expires_at_ms;
    return client.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...hashKey(keyHash), ...item, expires_at: unusableAfterMs ? ttlSeconds(unusableAfterMs) : undefined },
      }),
    );
  };

  return {
    async findByHash(keyHash: string): Promise<KeyHashItem | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: hashKey(keyHash) }));
      return result.Item as KeyHashItem | undefined;
    },

    async getRecord(keyId: string): Promise<ApiKeyRecord | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: recordKey(keyId), ConsistentRead: true }));
      return result.Item as ApiKeyRecord | undefined;
    },

    async create(record: ApiKeyRecord, hashItem: KeyHashItem): Promise<void> {
      await putHash(record.current_key_hash, hashItem);
      await client.send(
        new PutCommand({ TableName: tableName, Item: { ...recordKey(record.key_id), ...record }, ConditionExpression: 'attribute_not_exists(pk)' }),
      );
    },

    /**
     * The new value works at once; the old one keeps working until `previousValidUntilMs`, and values rotated away
     * before it until their own ends (`retired`: those whose grace may not be over, this one included).
     */
    async rotate(record: ApiKeyRecord, newHash: string, newItem: KeyHashItem, previousValidUntilMs: number, retired: RetiredKeyHash[]): Promise<void> {
      await putHash(newHash, newItem);
      await putHash(record.current_key_hash, { ...newItem, valid_until_ms: previousValidUntilMs });
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: recordKey(record.key_id),
          UpdateExpression:
            'SET current_key_hash = :new, previous_key_hash = :old, previous_valid_until_iso = :until, retired_key_hashes = :retired REMOVE previous_valid_until',
          ConditionExpression: 'current_key_hash = :old AND #state = :active',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':new': newHash,
            ':old': record.current_key_hash,
            ':until': new Date(previousValidUntilMs).toISOString(),
            ':retired': retired,
            ':active': 'active',
          },
        }),
      );
    },

    /** Marks the record first, then deletes every hash item, so no request authenticates after this returns. */
    async revoke(record: ApiKeyRecord): Promise<void> {
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: recordKey(record.key_id),
          UpdateExpression: 'SET #state = :revoked REMOVE previous_key_hash, previous_valid_until_iso, previous_valid_until, retired_key_hashes',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':revoked': 'revoked' },
        }),
      );
      const retired = new Set([record.previous_key_hash, ...(record.retired_key_hashes ?? []).map((entry) => entry.hash)]);
      await Promise.all([record.current_key_hash, ...retired].filter((hash) => hash !== undefined).map((hash) => this.deleteHash(hash)));
    },

    async deleteHash(keyHash: string): Promise<void> {
      await client.send(new DeleteCommand({ TableName: tableName, Key: hashKey(keyHash) }));
    },

    /** Admin only: a scan is fine for a handful of keys per project and never runs on a request path. */
    async listRecords(): Promise<ApiKeyRecord[]> {
      const records: ApiKeyRecord[] = [];
      const pages = paginateScan(
        { client },
        { TableName: tableName, FilterExpression: 'begins_with(pk, :record)', ExpressionAttributeValues: { ':record': 'keyid#' } },
      );
      for await (const page of pages) records.push(...((page.Items ?? []) as ApiKeyRecord[]));
      return records.sort((a, b) => a.created_at.localeCompare(b.created_at));
    },
  };
}

import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, paginateScan, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord, KeyHashItem, RetiredKeyHash } from './api-key-model.ts';
import { ttlSeconds } from '#shared/time.ts';
import { isConditionFailure } from '#shared/store/conditional-write.ts';

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

  /** A retired value stops at its end: set on its item only while the item exists (a revocation deleted it otherwise). */
  const endGrace = async ({ hash, valid_until_ms }: RetiredKeyHash) => {
    try {
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: hashKey(hash),
          UpdateExpression: 'SET valid_until_ms = :until, expires_at = :expires',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':until': valid_until_ms, ':expires': ttlSeconds(valid_until_ms) },
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
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
        new PutCommand({
          TableName: tableName,
          Item: { ...recordKey(record.key_id), ...record },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    },

    /**
     * The new value works at once; the old one keeps working until `previousValidUntilMs`, and values rotated away
     * before it until their own ends (`retired`: those whose grace may not be over, this one included). Writes come
     * in the order that keeps a concurrent revocation final: the new value's item first, then the record, on
     * condition that it is still active with the old value (a revocation or another rotation in between refuses it,
     * and the new item is deleted again: its value was never handed out); then the grace ends of the retired values,
     * on items that still exist (a revocation that deleted one is never undone). Setting every retired value's end
     * again also mends a rotation that stopped before setting its own.
     */
    async rotate(
      record: ApiKeyRecord,
      newHash: string,
      newItem: KeyHashItem,
      previousValidUntilMs: number,
      retired: RetiredKeyHash[],
    ): Promise<boolean> {
      await putHash(newHash, newItem);
      try {
        await client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: recordKey(record.key_id),
            UpdateExpression:
              'SET current_key_hash = :new, previous_key_hash = :old, previous_valid_until_iso = :until, retired_key_hashes = ' +
              ':retired REMOVE previous_valid_until',
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
      } catch (error) {
        await this.deleteHash(newHash);
        if (isConditionFailure(error)) return false;
        throw error;
      }
      await Promise.all(retired.map((entry) => endGrace(entry)));
      return true;
    },

    /**
     * Marks the record revoked, then deletes every value it names, read from the record as the revocation left it (so
     * a rotation that committed just before is included). The record keeps naming them: a revocation that failed
     * halfway is finished by running it again. No request authenticates with any of its values after this returns.
     */
    async revoke(keyId: string): Promise<void> {
      const { Attributes } = await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: recordKey(keyId),
          UpdateExpression: 'SET #state = :revoked',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':revoked': 'revoked' },
          ReturnValues: 'ALL_NEW',
        }),
      );
      const revoked = Attributes as ApiKeyRecord;
      const hashes = new Set([
        revoked.current_key_hash,
        revoked.previous_key_hash,
        ...(revoked.retired_key_hashes ?? []).map((entry) => entry.hash),
      ]);
      await Promise.all([...hashes].filter((hash) => hash !== undefined).map((hash) => this.deleteHash(hash)));
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

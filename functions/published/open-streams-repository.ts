import { DeleteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionHeld } from '#shared/store/conditional-write.ts';
import { allStoredItems } from '#shared/store/paginate.ts';
import { ttlSeconds } from '#shared/time.ts';

/**
 * Open streams, as leases in the stream events table beside the logs (`run#...` partitions): a partition per scope
 * (`open-streams#key#<key_id>` for a key's streams, `open-streams#deployment` for all of them) with one item per slot
 * (`slot#<n>`), held by one open stream until `until_ms`, the latest its invocation can end. A slot is taken with a
 * conditional write (free, or its lease over), so a scope never holds more leases than it has slots, and a stream
 * whose function crashed gives its slot back by its lease running out: nothing counts up that a crash could leave
 * counted. TTL tidies slots nobody took again; the read side checks `until_ms` itself.
 */
export interface SlotLease {
  slot: number;
  leaseId: string;
  untilMs: number;
}

interface SlotItem {
  pk: string;
  sk: string;
  lease_id: string;
  until_ms: number;
  expires_at: number;
}

const SLOT_DIGITS = 6;
const partitionOf = (scope: string) => `open-streams#${scope}`;
const slotKey = (slot: number) => `slot#${String(slot).padStart(SLOT_DIGITS, '0')}`;

export type OpenStreamsRepository = ReturnType<typeof createOpenStreamsRepository>;

export function createOpenStreamsRepository(client: DynamoDBDocumentClient, tableName: string) {
  return {
    /** Every lease of the scope not yet over at `nowMs` (strongly consistent: a free-looking slot must be free). */
    async liveLeases(scope: string, nowMs: number): Promise<SlotLease[]> {
      const items = await allStoredItems<Pick<SlotItem, 'sk' | 'lease_id' | 'until_ms'>>(client, {
        query: {
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': partitionOf(scope) },
          ProjectionExpression: 'sk, lease_id, until_ms',
          ConsistentRead: true,
        },
      });
      return items
        .filter((item) => item.until_ms > nowMs)
        .map((item) => ({ slot: Number(item.sk.slice('slot#'.length)), leaseId: item.lease_id, untilMs: item.until_ms }));
    },

    /** Takes the slot for `lease` if it is free (never taken, or its lease over at `nowMs`); answers whether it did. */
    take(scope: string, lease: SlotLease, nowMs: number): Promise<boolean> {
      const item: SlotItem = {
        pk: partitionOf(scope),
        sk: slotKey(lease.slot),
        lease_id: lease.leaseId,
        until_ms: lease.untilMs,
        expires_at: ttlSeconds(lease.untilMs),
      };
      return conditionHeld(
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: item,
            ConditionExpression: 'attribute_not_exists(pk) OR until_ms <= :now',
            ExpressionAttributeValues: { ':now': nowMs },
          }),
        ),
      );
    },

    /** Frees the slot if `lease` still holds it (a lease that ran out may have been taken by another stream since). */
    async give(scope: string, lease: SlotLease): Promise<void> {
      await conditionHeld(
        client.send(
          new DeleteCommand({
            TableName: tableName,
            Key: { pk: partitionOf(scope), sk: slotKey(lease.slot) },
            ConditionExpression: 'lease_id = :lease',
            ExpressionAttributeValues: { ':lease': lease.leaseId },
          }),
        ),
      );
    },
  };
}

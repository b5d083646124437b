import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { isConditionFailure } from '#shared/store/conditional-write.ts';
import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { epochSeconds } from '#shared/time.ts';
import { isLive, type StoredEvent } from './stored-event.ts';
import { storedPages } from '#shared/store/paginate.ts';
import { BY_RECEIVED } from '#shared/store/table-indexes.ts';

/**
 * The inbound events table for ingest and the links service (the collection's view: functions/collection/queue-repository.ts):
 * one item per (source_id, external_id) (stored-event.ts), which makes the item itself the deduplication record. The `by_received` index
 * lists a source's events newest first for the
 * metadata schema, the filters and the nightly collection.
 */
export const BY_RECEIVED_INDEX = BY_RECEIVED.name;

export function createEventsRepository(client: DynamoDBDocumentClient, tableName: string) {
  return {
    /**
     * Stores the event unless (source, external_id) holds a live one. A refused write answers the event that is there
     * (`ALL_OLD` on the failed condition): a duplicate costs no second read.
     */
    async putIfNew(event: StoredEvent, nowMs: number): Promise<{ stored: true } | { stored: false; existing?: StoredEvent }> {
      try {
        await client.send(
          new PutCommand({
            TableName: tableName,
            Item: event,
            ConditionExpression: 'attribute_not_exists(external_id) OR expires_at <= :now',
            ExpressionAttributeValues: { ':now': epochSeconds(nowMs) },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return { stored: true };
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
        const old = (error as { Item?: Record<string, AttributeValue> }).Item;
        return { stored: false, existing: old ? (unmarshall(old) as StoredEvent) : undefined };
      }
    },

    async findLive(sourceId: string, externalId: string, nowMs: number): Promise<StoredEvent | undefined> {
      const result = await client.send(
        new GetCommand({
          TableName: tableName,
          Key: { source_id: sourceId, external_id: externalId },
          ProjectionExpression: 'source_id, external_id, event_id, expires_at',
          ConsistentRead: true,
        }),
      );
      const event = result.Item as StoredEvent | undefined;
      return event && isLive(event, nowMs) ? event : undefined;
    },

    /**
     * Deletes one event's item and answers it as it was (undefined when there was none): `admin verify` takes back the
     * event it sent. A body kept in the bucket (`body_s3_key`) is the caller's to delete.
     */
    async remove(sourceId: string, externalId: string): Promise<StoredEvent | undefined> {
      const result = await client.send(
        new DeleteCommand({ TableName: tableName, Key: { source_id: sourceId, external_id: externalId }, ReturnValues: 'ALL_OLD' }),
      );
      return result.Attributes as StoredEvent | undefined;
    },

    /** The newest live events of a source, as projected into the index. */
    async recent(sourceId: string, count: number, nowMs: number): Promise<StoredEvent[]> {
      const events: StoredEvent[] = [];
      const query = {
        TableName: tableName,
        IndexName: BY_RECEIVED_INDEX,
        KeyConditionExpression: 'source_id = :source',
        ExpressionAttributeValues: { ':source': sourceId },
        ScanIndexForward: false,
        Limit: count,
      };
      for await (const page of storedPages<StoredEvent>(client, { query })) {
        for (const item of page) {
          if (isLive(item, nowMs) && events.length < count) events.push(item);
        }
        if (events.length >= count) break;
      }
      return events;
    },
  };
}

export type EventsRepository = ReturnType<typeof createEventsRepository>;

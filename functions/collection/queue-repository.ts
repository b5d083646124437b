import { GetCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionHeld } from '#shared/store/conditional-write.ts';
import { BY_RECEIVED_INDEX } from '#inbound/events-repository.ts';
import type { EventState, StoredEvent } from '#inbound/stored-event.ts';
import { allStoredItems } from '#shared/store/paginate.ts';

/**
 * The inbound events table as the collection sees it: a queue of stored events (#inbound/stored-event.ts). An event
 * moves `queued → handing → handed_off`, or back to `queued` with one more failure, or to `abandoned` at the last one.
 * Every move is a conditional write naming the sweep, so two sweeps can never both hand an event off:
 * - `claim` takes a queued event for a sweep (or an event a sweep left `handing` longer than the lease ago: that sweep died);
 * - `handedOff` and `release` succeed only for the sweep holding the claim.
 * A sweep is named here by its key, `<task_id>/<sweep_id>` (every task's nightly sweep has the same sweep id).
 */

// Stored names from when a sweep was called a run, kept so that tables deployed earlier read the same:
/** The sweep holding, or last holding, the event's claim. */
const CLAIMING_SWEEP = 'handed_run' satisfies keyof StoredEvent;
/** The sweeps that gave the event back after trying it: each tries an event once, whatever retries its batch has. */
const SWEEPS_GIVEN_BACK = 'tried_runs' satisfies keyof StoredEvent;

/** Whether this sweep already tried the event and gave it back (before a batch of it failed): its tries are spent. */
export function givenBackBy(event: StoredEvent, sweepKey: string): boolean {
  return event[SWEEPS_GIVEN_BACK]?.has(sweepKey) ?? false;
}

export interface QueuePage {
  events: Pick<StoredEvent, 'source_id' | 'external_id' | 'received_key' | 'state'>[];
  /** The received key up to which the index was read (the checkpoint after this page); undefined at the end. */
  lastKey: string | undefined;
}

export type QueueRepository = ReturnType<typeof createQueueRepository>;

export function createQueueRepository(client: DynamoDBDocumentClient, tableName: string) {
  const key = (event: Pick<StoredEvent, 'source_id' | 'external_id'>) => ({ source_id: event.source_id, external_id: event.external_id });
  return {
    /** One page of a source's events received after `afterKey` and before `cutoffKey` that may still need a hand-off. */
    async page(sourceId: string, afterKey: string, cutoffKey: string, limit: number): Promise<QueuePage> {
      const result = await client.send(
        new QueryCommand({
          TableName: tableName,
          IndexName: BY_RECEIVED_INDEX,
          KeyConditionExpression: 'source_id = :source AND received_key BETWEEN :from AND :to',
          FilterExpression: '#state IN (:queued, :handing)',
          ExpressionAttributeNames: { '#state': 'state' },
          // `\u0001` after the key: the first key after it (received keys never contain control characters).
          ExpressionAttributeValues: {
            ':source': sourceId,
            ':from': `${afterKey}\u0001`,
            ':to': cutoffKey,
            ':queued': 'queued' satisfies EventState,
            ':handing': 'handing' satisfies EventState,
          },
          Limit: limit,
        }),
      );
      const lastKey = result.LastEvaluatedKey?.received_key as string | undefined;
      return { events: (result.Items ?? []) as QueuePage['events'], lastKey };
    },

    /** The whole item (its body inline or the S3 key), strongly consistent. */
    async get(event: Pick<StoredEvent, 'source_id' | 'external_id'>): Promise<StoredEvent | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: key(event), ConsistentRead: true }));
      return result.Item as StoredEvent | undefined;
    },

    claim(event: StoredEvent, sweepKey: string, nowMs: number, leaseMs: number): Promise<boolean> {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: key(event),
            UpdateExpression: 'SET #state = :handing, #claimedBy = :sweep, claimed_at_ms = :now',
            ConditionExpression: '#state = :queued OR (#state = :handing AND (#claimedBy = :sweep OR claimed_at_ms < :stale))',
            ExpressionAttributeNames: { '#state': 'state', '#claimedBy': CLAIMING_SWEEP },
            ExpressionAttributeValues: {
              ':handing': 'handing' satisfies EventState,
              ':queued': 'queued' satisfies EventState,
              ':sweep': sweepKey,
              ':now': nowMs,
              ':stale': nowMs - leaseMs,
            },
          }),
        ),
      );
    },

    handedOff(event: StoredEvent, sweepKey: string, handedAt: string): Promise<boolean> {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: key(event),
            UpdateExpression: 'SET #state = :handed, handed_at = :at REMOVE claimed_at_ms',
            ConditionExpression: '#state = :handing AND #claimedBy = :sweep',
            ExpressionAttributeNames: { '#state': 'state', '#claimedBy': CLAIMING_SWEEP },
            ExpressionAttributeValues: {
              ':handed': 'handed_off' satisfies EventState,
              ':handing': 'handing' satisfies EventState,
              ':sweep': sweepKey,
              ':at': handedAt,
            },
          }),
        ),
      );
    },

    /** Gives the event back with one more failure, or abandons it at the last one. */
    release(event: StoredEvent, sweepKey: string, failure: { reason: string; abandon: boolean; failures: number }): Promise<boolean> {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: key(event),
            UpdateExpression:
              'SET #state = :next, last_error = :reason ADD delivery_failures :failures, #givenBack :sweeps REMOVE claimed_at_ms',
            ConditionExpression: '#state = :handing AND #claimedBy = :sweep',
            ExpressionAttributeNames: { '#state': 'state', '#claimedBy': CLAIMING_SWEEP, '#givenBack': SWEEPS_GIVEN_BACK },
            ExpressionAttributeValues: {
              ':next': (failure.abandon ? 'abandoned' : 'queued') satisfies EventState,
              ':handing': 'handing' satisfies EventState,
              ':sweep': sweepKey,
              ':reason': failure.reason,
              ':failures': failure.failures,
              ':sweeps': new Set([sweepKey]),
            },
          }),
        ),
      );
    },

    /** Every event of a source, newest first (the operator's `events` listing), from the base table. */
    async listBySource(sourceId: string): Promise<StoredEvent[]> {
      return allStoredItems<StoredEvent>(client, {
        query: {
          TableName: tableName,
          KeyConditionExpression: 'source_id = :source',
          ExpressionAttributeValues: { ':source': sourceId },
          ProjectionExpression: 'source_id, external_id, event_id, #type, #state, delivery_failures, last_error, received_at, expires_at',
          ExpressionAttributeNames: { '#type': 'type', '#state': 'state' },
        },
      });
    },
  };
}

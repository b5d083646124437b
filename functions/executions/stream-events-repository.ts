import { gunzipSync, gzipSync } from 'node:zlib';
import { GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { conditionHeld } from '#shared/store/conditional-write.ts';
import { STREAM_EVENT_BATCH_GZIP_FROM_BYTES, STREAM_EVENT_ITEM_BODY_MAX_BYTES } from '#shared/limits.ts';
import { newId } from '#shared/secrets.ts';
import { ttlSeconds } from '#shared/time.ts';
import type { NumberedStreamEvent, StreamEvent } from './stream-events.ts';
import { allStoredItems } from '#shared/store/paginate.ts';

/**
 * Stream events table. One item per batch of events (`pk` = `run#<execution_id>`, `sk` = the batch's first event
 * id, zero-padded so string order is number order). A batch is written with `attribute_not_exists`, so two
 * writers can never take the same ids, and each writer starts at the end of the batch it last saw: the ids
 * stay gap-free whoever writes. The body is the batch's events as JSON, gzip-compressed past 1 KB; a body too
 * large for one item (a large output) is kept in `parts#<execution_id>#<nonce>` items, written first.
 */
export interface StreamEventBatch {
  firstId: number;
  events: NumberedStreamEvent[];
  /** The batch ends with the log's final `complete`. */
  final: boolean;
}

export interface LogTail {
  lastId: number;
  final: boolean;
}

interface BatchItem {
  pk: string;
  sk: string;
  first_id: number;
  count: number;
  final: boolean;
  /** The execution's project, on the first batch only: the streaming routes answer another project's run 404 from it. */
  project_id?: string;
  body?: Uint8Array;
  gzip?: boolean;
  parts?: { pk: string; count: number };
  expires_at: number;
}

const SORT_KEY_DIGITS = 12;
const logKey = (executionId: string) => `run#${executionId}`;
const sortKeyOf = (id: number) => String(id).padStart(SORT_KEY_DIGITS, '0');

export type StreamEventsRepository = ReturnType<typeof createStreamEventsRepository>;

export function createStreamEventsRepository(client: DynamoDBDocumentClient, tableName: string) {
  async function encodeBody(
    executionId: string,
    events: readonly StreamEvent[],
    expiresAt: number,
  ): Promise<Pick<BatchItem, 'body' | 'gzip' | 'parts'>> {
    const json = Buffer.from(JSON.stringify(events.map(({ type, data }) => [type, data])), 'utf8');
    const gzip = json.byteLength >= STREAM_EVENT_BATCH_GZIP_FROM_BYTES;
    const body = gzip ? gzipSync(json) : json;
    if (body.byteLength <= STREAM_EVENT_ITEM_BODY_MAX_BYTES) return { body, gzip };
    const partsKey = `parts#${executionId}#${newId('')}`;
    const count = Math.ceil(body.byteLength / STREAM_EVENT_ITEM_BODY_MAX_BYTES);
    for (let index = 0; index < count; index++) {
      const piece = body.subarray(index * STREAM_EVENT_ITEM_BODY_MAX_BYTES, (index + 1) * STREAM_EVENT_ITEM_BODY_MAX_BYTES);
      await client.send(
        new PutCommand({ TableName: tableName, Item: { pk: partsKey, sk: sortKeyOf(index), body: piece, expires_at: expiresAt } }),
      );
    }
    return { gzip, parts: { pk: partsKey, count } };
  }

  async function decodeBatch(item: BatchItem): Promise<StreamEventBatch> {
    let body = item.body ? Buffer.from(item.body) : Buffer.alloc(0);
    if (item.parts) {
      const pieces = await queryAll({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': item.parts.pk },
        ConsistentRead: true,
      });
      if (pieces.length !== item.parts.count)
        throw new Error(`Stream event batch ${item.pk}/${item.sk} has ${pieces.length} of ${item.parts.count} parts`);
      body = Buffer.concat(pieces.map((piece) => Buffer.from(piece.body as Uint8Array)));
    }
    const json = item.gzip ? gunzipSync(body) : body;
    const pairs = JSON.parse(json.toString('utf8')) as [StreamEvent['type'], Record<string, unknown>][];
    return {
      firstId: item.first_id,
      final: item.final,
      events: pairs.map(([type, data], index) => ({ id: item.first_id + index, type, data })),
    };
  }

  const queryAll = (query: QueryCommandInput) => allStoredItems(client, { query });

  return {
    /** Where the log ends now (strongly consistent): the next batch starts at `lastId + 1`, unless the log is final. */
    async tail(executionId: string): Promise<LogTail> {
      const result = await client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': logKey(executionId) },
          ProjectionExpression: 'first_id, #count, #final',
          ExpressionAttributeNames: { '#count': 'count', '#final': 'final' },
          ScanIndexForward: false,
          Limit: 1,
          ConsistentRead: true,
        }),
      );
      const last = result.Items?.[0] as Pick<BatchItem, 'first_id' | 'count' | 'final'> | undefined;
      return last ? { lastId: last.first_id + last.count - 1, final: last.final } : { lastId: 0, final: false };
    },

    /** Writes the batch at `firstId` unless a batch already starts there; answers whether it did. */
    async putBatch(
      executionId: string,
      firstId: number,
      events: readonly StreamEvent[],
      options: { final: boolean; projectId?: string; expiresAtMs: number },
    ): Promise<boolean> {
      const expiresAt = ttlSeconds(options.expiresAtMs);
      const item: BatchItem = {
        pk: logKey(executionId),
        sk: sortKeyOf(firstId),
        first_id: firstId,
        count: events.length,
        final: options.final,
        ...(options.projectId !== undefined ? { project_id: options.projectId } : {}),
        ...(await encodeBody(executionId, events, expiresAt)),
        expires_at: expiresAt,
      };
      return conditionHeld(
        client.send(new PutCommand({ TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' })),
      );
    },

    /** The project that owns the execution, from its first batch; undefined when the execution has no log. */
    async owner(executionId: string): Promise<string | undefined> {
      const result = await client.send(
        new GetCommand({
          TableName: tableName,
          Key: { pk: logKey(executionId), sk: sortKeyOf(1) },
          ProjectionExpression: 'project_id',
          ConsistentRead: true,
        }),
      );
      return (result.Item as Pick<BatchItem, 'project_id'> | undefined)?.project_id;
    },

    /** The batch holding event `id` (the last batch starting at or before it), if there is one. */
    async batchHolding(executionId: string, id: number): Promise<StreamEventBatch | undefined> {
      const result = await client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk AND sk <= :id',
          ExpressionAttributeValues: { ':pk': logKey(executionId), ':id': sortKeyOf(id) },
          ScanIndexForward: false,
          Limit: 1,
          ConsistentRead: true,
        }),
      );
      const item = result.Items?.[0] as BatchItem | undefined;
      return item ? decodeBatch(item) : undefined;
    },

    /** Batches starting after `afterFirstId`, oldest first, at most one page (strongly consistent: a tail must not miss one). */
    async batchesAfter(executionId: string, afterFirstId: number): Promise<{ batches: StreamEventBatch[]; more: boolean }> {
      const result = await client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk AND sk > :after',
          ExpressionAttributeValues: { ':pk': logKey(executionId), ':after': sortKeyOf(afterFirstId) },
          ConsistentRead: true,
        }),
      );
      const batches = await Promise.all((result.Items ?? []).map((item) => decodeBatch(item as BatchItem)));
      return { batches, more: result.LastEvaluatedKey !== undefined };
    },
  };
}

import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { conditionHeld, isConditionFailure } from '#shared/store/conditional-write.ts';
import { epochSeconds, ttlSeconds } from '#shared/time.ts';

/**
 * One item per (project, Idempotency-Key) in the executions table, `idempotency#<project>#<key>` (project ids have no
 * `#`, so the key may): the execution the key names, reserved before that run is written, and the fingerprint of the
 * request that reserved it. `starting` until the run has started; while starting, `starting_until_ms` is when the
 * reserving invocation has certainly ended. Expires with the key (TTL); reads treat an item past it as gone, since
 * DynamoDB deletes expired items only eventually (and the twin's store never does).
 */
export interface KeyReservation {
  execution_id: string;
  request_sha256: string;
  state: 'starting' | 'started';
  starting_until_ms?: number;
  /** TTL, epoch seconds. */
  expires_at: number;
}

export interface NewReservation {
  projectId: string;
  key: string;
  executionId: string;
  requestSha256: string;
  startingUntilMs: number;
  expiresAtMs: number;
}

export type ReserveOutcome = { reserved: true } | { reserved: false; existing?: KeyReservation };

const itemKey = (projectId: string, key: string) => ({ pk: `idempotency#${projectId}#${key}` });

const isLive = (item: KeyReservation, nowMs: number) => item.expires_at > epochSeconds(nowMs);

export type IdempotencyRepository = ReturnType<typeof createIdempotencyRepository>;

export function createIdempotencyRepository(client: DynamoDBDocumentClient, tableName: string) {
  return {
    /**
     * Reserves the key for `executionId` unless a live reservation holds it; one whose first request died before
     * its run started (starting, past `starting_until_ms`) is taken over. A refused write answers what holds the key
     * (`ALL_OLD` on the failed condition), so a repeated request costs no second read.
     */
    async reserve(reservation: NewReservation, nowMs: number): Promise<ReserveOutcome> {
      const item: KeyReservation = {
        execution_id: reservation.executionId,
        request_sha256: reservation.requestSha256,
        state: 'starting',
        starting_until_ms: reservation.startingUntilMs,
        expires_at: ttlSeconds(reservation.expiresAtMs),
      };
      try {
        await client.send(
          new PutCommand({
            TableName: tableName,
            Item: { ...itemKey(reservation.projectId, reservation.key), ...item },
            ConditionExpression: 'attribute_not_exists(pk) OR expires_at <= :now OR (#state = :starting AND starting_until_ms <= :nowMs)',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':now': epochSeconds(nowMs), ':nowMs': nowMs, ':starting': 'starting' },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return { reserved: true };
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
        const old = (error as { Item?: Record<string, AttributeValue> }).Item;
        return { reserved: false, existing: old ? asReservation(unmarshall(old)) : undefined };
      }
    },

    /** The key's live reservation, read strongly consistent: a request waiting for the first one sees its progress. */
    async find(projectId: string, key: string, nowMs: number): Promise<KeyReservation | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: itemKey(projectId, key), ConsistentRead: true }));
      const item = result.Item ? asReservation(result.Item) : undefined;
      return item && isLive(item, nowMs) ? item : undefined;
    },

    /** The run has started: from now on the key names it for good. False when the key no longer holds this execution. */
    async markStarted(projectId: string, key: string, executionId: string): Promise<boolean> {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: itemKey(projectId, key),
            UpdateExpression: 'SET #state = :started REMOVE starting_until_ms',
            ConditionExpression: 'execution_id = :execution',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':started': 'started', ':execution': executionId },
          }),
        ),
      );
    },

    /** The run was refused or could not start: the key is free for the next request, unless another already holds it. */
    async release(projectId: string, key: string, executionId: string): Promise<boolean> {
      return conditionHeld(
        client.send(
          new DeleteCommand({
            TableName: tableName,
            Key: itemKey(projectId, key),
            ConditionExpression: 'execution_id = :execution AND #state = :starting',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':execution': executionId, ':starting': 'starting' },
          }),
        ),
      );
    },
  };
}

function asReservation(item: Record<string, unknown>): KeyReservation {
  const { pk: _pk, ...reservation } = item;
  return reservation as unknown as KeyReservation;
}

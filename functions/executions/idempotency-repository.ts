import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { conditionHeld, isConditionFailure } from '#shared/store/conditional-write.ts';
import { epochSeconds, ttlSeconds } from '#shared/time.ts';

/**
 * One item per (project, Idempotency-Key) in the executions table, `idempotency#<project>#<key>` (project ids have no
 * `#`, so the key may): the execution the key names, reserved before that execution is written, the fingerprint of the
 * request that reserved it, and what a retry needs to start that same execution again if the request died on the way.
 *
 * States, in order: `starting` (reserved; the execution's items may be partly written, the state machine is not started),
 * `launching` (every item is written and `start_input` is the state machine input: the start may have been sent),
 * `started` (the execution is going). While not started, one request holds a lease on the start: `lease_id`, made by the
 * request that reserved the key or took it over, and `starting_until_ms`, when the lease ends. Every later write of
 * its holder (`markLaunching`, `markStarted`, `handBack`, `release`) is conditional on its `lease_id`, so a holder that
 * outlived its lease and lost the key to another request changes nothing. Past `starting_until_ms`, a retry of the same
 * request takes the key over (`takeOver`, a new lease) and drives the start of the same execution to its end: from
 * `starting` it writes the same items again (same ids, thread and creation time) and starts; from `launching` it sends
 * the same StartExecution again (same name and input), which Step Functions answers with the one execution of that
 * name. Expires with the key (TTL); reads treat an item past it as gone, since DynamoDB deletes expired items only
 * eventually (and the twin's store never does).
 */
export interface KeyReservation {
  execution_id: string;
  request_sha256: string;
  state: 'starting' | 'launching' | 'started';
  /** While not started: the id of the lease on the start, and when it ends. Absent from `starting` items of the previous release. */
  lease_id?: string;
  starting_until_ms?: number;
  /**
   * The execution's thread (the request's, or the one made for it) and creation time: a retry writes the same items. Absent from items of
   * the previous release.
   */
  thread_id?: string;
  created_at_ms?: number;
  /** `launching`: the state machine input, as JSON. */
  start_input?: string;
  /** TTL, epoch seconds. */
  expires_at: number;
}

/** A request's lease on the start of the execution its key names: an id of its own, and when it ends. */
export interface Lease {
  id: string;
  untilMs: number;
}

export interface NewReservation {
  projectId: string;
  key: string;
  executionId: string;
  requestSha256: string;
  threadId: string;
  createdAtMs: number;
  lease: Lease;
  expiresAtMs: number;
}

export type ReserveOutcome = { reserved: true } | { reserved: false; existing?: KeyReservation };

export const reservationKey = (projectId: string, key: string) => ({ pk: `idempotency#${projectId}#${key}` });

/** Whether a reservation still holds its key: DynamoDB deletes an expired item only eventually, so reads check. */
export const isLive = (item: KeyReservation, nowMs: number) => item.expires_at > epochSeconds(nowMs);

/** The item a request that reserves a key writes: `starting`, under the request's lease. */
export function startingReservation(reservation: NewReservation): KeyReservation {
  return {
    execution_id: reservation.executionId,
    request_sha256: reservation.requestSha256,
    state: 'starting',
    lease_id: reservation.lease.id,
    starting_until_ms: reservation.lease.untilMs,
    thread_id: reservation.threadId,
    created_at_ms: reservation.createdAtMs,
    expires_at: ttlSeconds(reservation.expiresAtMs),
  };
}

/** What only a start in progress needs, which `started` drops: the key then names its execution for good. */
export const IN_PROGRESS_FIELDS = ['lease_id', 'starting_until_ms', 'start_input'] as const satisfies readonly (keyof KeyReservation)[];

export type IdempotencyRepository = ReturnType<typeof createIdempotencyRepository>;

export function createIdempotencyRepository(client: DynamoDBDocumentClient, tableName: string) {
  return {
    /**
     * Reserves the key for `executionId` under `lease` unless a live reservation holds it (one whose lease has passed
     * too: `takeOver` keeps its execution). A refused write answers what holds the key (`ALL_OLD` on the failed
     * condition), so a repeated request costs no second read.
     */
    async reserve(reservation: NewReservation, nowMs: number): Promise<ReserveOutcome> {
      try {
        await client.send(
          new PutCommand({
            TableName: tableName,
            Item: { ...reservationKey(reservation.projectId, reservation.key), ...startingReservation(reservation) },
            ConditionExpression: 'attribute_not_exists(pk) OR expires_at <= :now',
            ExpressionAttributeValues: { ':now': epochSeconds(nowMs) },
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
      const result = await client.send(new GetCommand({ TableName: tableName, Key: reservationKey(projectId, key), ConsistentRead: true }));
      const item = result.Item ? asReservation(result.Item) : undefined;
      return item && isLive(item, nowMs) ? item : undefined;
    },

    /**
     * Every item of the execution is written and the state machine is about to be started with `input`: a retry that takes
     * the key over from here sends the same start again instead of writing the items. False when the key is no longer
     * `starting` under this lease (another request took it over, or it moved on).
     */
    async markLaunching(projectId: string, key: string, executionId: string, leaseId: string, input: string): Promise<boolean> {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: reservationKey(projectId, key),
            UpdateExpression: 'SET #state = :launching, start_input = :input',
            ConditionExpression: 'execution_id = :execution AND lease_id = :lease AND #state = :starting',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: {
              ':launching': 'launching',
              ':starting': 'starting',
              ':input': input,
              ':execution': executionId,
              ':lease': leaseId,
            },
          }),
        ),
      );
    },

    /**
     * The execution has started: from now on the key names it for good, and no lease holds it. False when the key is no
     * longer held under this lease: another request took it over (and is finishing the same start), or marked it.
     */
    async markStarted(projectId: string, key: string, executionId: string, leaseId: string): Promise<boolean> {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: reservationKey(projectId, key),
            UpdateExpression: `SET #state = :started REMOVE ${IN_PROGRESS_FIELDS.join(', ')}`,
            ConditionExpression: 'execution_id = :execution AND lease_id = :lease',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':started': 'started', ':execution': executionId, ':lease': leaseId },
          }),
        ),
      );
    },

    /**
     * Takes over a reservation whose lease has passed before it said the execution started (`holder` as read: same execution,
     * same state, `starting_until_ms` passed) under a new `lease`: one retry wins, and drives the start of the same
     * execution; the request that held the previous lease can no longer write the key. False when another retry took
     * it first, or it moved on.
     */
    async takeOver(
      projectId: string,
      key: string,
      holder: Pick<KeyReservation, 'execution_id' | 'state'>,
      lease: Lease,
      nowMs: number,
    ): Promise<boolean> {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: reservationKey(projectId, key),
            UpdateExpression: 'SET lease_id = :lease, starting_until_ms = :until',
            ConditionExpression: 'execution_id = :execution AND #state = :state AND starting_until_ms <= :nowMs AND expires_at > :now',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: {
              ':lease': lease.id,
              ':until': lease.untilMs,
              ':execution': holder.execution_id,
              ':state': holder.state,
              ':nowMs': nowMs,
              ':now': epochSeconds(nowMs),
            },
          }),
        ),
      );
    },

    /**
     * This request stops driving the start without knowing whether the execution started (its StartExecution failed after
     * every item was written): its lease ends now, so the next retry may take the key over at once. False when the key
     * is no longer held under this lease (`started` keeps none).
     */
    async handBack(projectId: string, key: string, executionId: string, leaseId: string, nowMs: number): Promise<boolean> {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: reservationKey(projectId, key),
            UpdateExpression: 'SET starting_until_ms = :nowMs',
            ConditionExpression: 'execution_id = :execution AND lease_id = :lease',
            ExpressionAttributeValues: { ':nowMs': nowMs, ':execution': executionId, ':lease': leaseId },
          }),
        ),
      );
    },

    /**
     * The execution was refused or could not start: the key is free for the next request. False when the key is no longer
     * held under this lease: another request took it over (and drives the start), or it started.
     */
    async release(projectId: string, key: string, executionId: string, leaseId: string): Promise<boolean> {
      return conditionHeld(
        client.send(
          new DeleteCommand({
            TableName: tableName,
            Key: reservationKey(projectId, key),
            ConditionExpression: 'execution_id = :execution AND lease_id = :lease',
            ExpressionAttributeValues: { ':execution': executionId, ':lease': leaseId },
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

import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createIdempotencyRepository, type Lease } from '#executions/idempotency-repository.ts';
import { IDEMPOTENCY_KEY_RETENTION_MS, IDEMPOTENT_START_LEASE_MS } from '#shared/limits.ts';
import { localTableName } from '#lib/twin/stores.ts';
import { useEmbeddedDynamo } from '../support/embedded-dynamo.ts';

/**
 * The Idempotency-Key's conditions against the embedded DynamoDB: a request that reserved a key or took it over writes
 * it only under its own lease, so once another request has taken the key over, nothing the first one sends lands.
 */
describe('idempotency repository: the lease on a start (embedded DynamoDB)', () => {
  const store = useEmbeddedDynamo('idempotency-lease');
  const table = localTableName('executions');
  const repository = () => createIdempotencyRepository(store(), table);
  const PROJECT = 'project-a';
  const T0 = Date.parse('2025-03-10T12:00:00.000Z');
  const leaseAt = (nowMs: number): Lease => ({ id: randomUUID(), untilMs: nowMs + IDEMPOTENT_START_LEASE_MS });
  const stored = async (key: string) =>
    (await store().send(new GetCommand({ TableName: table, Key: { pk: `idempotency#${PROJECT}#${key}` }, ConsistentRead: true }))).Item;

  /** A key reserved at T0 under a first lease, as its first request leaves it. */
  async function reserved() {
    const key = `key-${randomUUID()}`;
    const executionId = randomUUID();
    const first = leaseAt(T0);
    const outcome = await repository().reserve(
      {
        projectId: PROJECT,
        key,
        executionId,
        requestSha256: 'sha',
        threadId: 'thread',
        createdAtMs: T0,
        lease: first,
        expiresAtMs: Date.now() + IDEMPOTENCY_KEY_RETENTION_MS,
      },
      T0,
    );
    expect(outcome).toEqual({ reserved: true });
    return { key, executionId, first };
  }

  it('writes the reservation with its lease, and refuses a second reservation of the key', async () => {
    const { key, executionId, first } = await reserved();
    const again = await repository().reserve(
      {
        projectId: PROJECT,
        key,
        executionId: randomUUID(),
        requestSha256: 'sha',
        threadId: 't',
        createdAtMs: T0,
        lease: leaseAt(T0),
        expiresAtMs: Date.now() + 60_000,
      },
      T0,
    );

    // DynamoDB answers the refusal with the item that holds the key; the embedded store may not, and the key is read.
    expect(again.reserved).toBe(false);
    const holder = (again.reserved ? undefined : again.existing) ?? (await repository().find(PROJECT, key, T0));
    expect(holder).toMatchObject({ execution_id: executionId, state: 'starting', lease_id: first.id, starting_until_ms: first.untilMs });
  });

  it('marks launching and started only under the lease that holds the key', async () => {
    const { key, executionId, first } = await reserved();

    expect(await repository().markLaunching(PROJECT, key, executionId, randomUUID(), '{}')).toBe(false);
    expect(await repository().markLaunching(PROJECT, key, executionId, first.id, '{"mode":"run"}')).toBe(true);
    expect(await repository().markStarted(PROJECT, key, executionId, randomUUID())).toBe(false);
    expect(await stored(key)).toMatchObject({ state: 'launching', lease_id: first.id, start_input: '{"mode":"run"}' });
    expect(await repository().markStarted(PROJECT, key, executionId, first.id)).toBe(true);

    const item = await stored(key);
    expect(item).toMatchObject({ execution_id: executionId, state: 'started' });
    expect(item).not.toHaveProperty('lease_id');
    expect(item).not.toHaveProperty('starting_until_ms');
    expect(item).not.toHaveProperty('start_input');
    // A started key holds no lease: nobody can hand it back or free it.
    expect(await repository().handBack(PROJECT, key, executionId, first.id, T0)).toBe(false);
    expect(await repository().release(PROJECT, key, executionId, first.id)).toBe(false);
    expect(await stored(key)).toMatchObject({ state: 'started' });
  });

  it('is taken over only once the lease has passed, and then refuses every write under the lease it replaced', async () => {
    const { key, executionId, first } = await reserved();
    const holder = { execution_id: executionId, state: 'starting' as const };

    expect(await repository().takeOver(PROJECT, key, holder, leaseAt(first.untilMs - 1), first.untilMs - 1)).toBe(false);
    const second = leaseAt(first.untilMs);
    expect(await repository().takeOver(PROJECT, key, holder, second, first.untilMs)).toBe(true);
    expect(await repository().takeOver(PROJECT, key, holder, leaseAt(first.untilMs), first.untilMs)).toBe(false);
    expect(await stored(key)).toMatchObject({ state: 'starting', lease_id: second.id, starting_until_ms: second.untilMs });

    // The first request, slow but alive, goes on: nothing of it lands.
    expect(await repository().markLaunching(PROJECT, key, executionId, first.id, '{}')).toBe(false);
    expect(await repository().handBack(PROJECT, key, executionId, first.id, first.untilMs)).toBe(false);
    expect(await repository().release(PROJECT, key, executionId, first.id)).toBe(false);
    expect(await repository().markStarted(PROJECT, key, executionId, first.id)).toBe(false);
    expect(await stored(key)).toMatchObject({
      execution_id: executionId,
      state: 'starting',
      lease_id: second.id,
      starting_until_ms: second.untilMs,
    });

    // The request that took it over drives the start.
    expect(await repository().markLaunching(PROJECT, key, executionId, second.id, '{}')).toBe(true);
    expect(await repository().markStarted(PROJECT, key, executionId, second.id)).toBe(true);
    expect(await stored(key)).toMatchObject({ execution_id: executionId, state: 'started' });
  });

  it('hands the key back and frees it only under its lease', async () => {
    const { key, executionId, first } = await reserved();

    expect(await repository().handBack(PROJECT, key, randomUUID(), first.id, T0 + 5)).toBe(false);
    expect(await repository().handBack(PROJECT, key, executionId, first.id, T0 + 5)).toBe(true);
    expect(await stored(key)).toMatchObject({ lease_id: first.id, starting_until_ms: T0 + 5 });
    // Handed back, it may be taken over at once, and then the first lease frees nothing.
    const second = leaseAt(T0 + 5);
    expect(await repository().takeOver(PROJECT, key, { execution_id: executionId, state: 'starting' }, second, T0 + 5)).toBe(true);
    expect(await repository().release(PROJECT, key, executionId, first.id)).toBe(false);
    expect(await stored(key)).toMatchObject({ lease_id: second.id });

    expect(await repository().release(PROJECT, key, executionId, second.id)).toBe(true);
    expect(await stored(key)).toBeUndefined();
  });
});

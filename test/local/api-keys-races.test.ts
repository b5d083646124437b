import { DeleteCommand, GetCommand, PutCommand, ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createApiKeysRepository } from '#published/api-keys-repository.ts';
import { createKey, revokeKey, rotateKey } from '#published/api-keys-service.ts';
import { hashSecret } from '#shared/secrets.ts';
import { ConflictError } from '#shared/errors.ts';
import { localTableName } from '#lib/twin/stores.ts';
import { useEmbeddedDynamo } from '../support/embedded-dynamo.ts';

/**
 * Key rotation and revocation against the embedded DynamoDB, with one write of an operation held back until another
 * operation has run: whichever way they interleave, no value of a revoked key may authenticate afterwards.
 */
describe('API keys: rotation and revocation overlapping', () => {
  const store = useEmbeddedDynamo('api-keys-races');
  const table = localTableName('apiKeys');
  const counters = { take: async () => ({ ok: true }) } as never;

  /** A client that holds back the first command `held` picks until `release()`, or fails it with `failWith`. */
  function holdingClient(held: (command: unknown) => boolean, failWith?: Error) {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let heldCount = 0;
    const client = {
      send: async (command: unknown) => {
        if (heldCount === 0 && held(command)) {
          heldCount += 1;
          if (failWith) throw failWith;
          await gate;
        }
        return store().send(command as UpdateCommand);
      },
    } as unknown as DynamoDBDocumentClient;
    return { deps: { keys: createApiKeysRepository(client, table), counters, now: Date.now }, release, held: () => heldCount };
  }

  const plain = () => ({ keys: createApiKeysRepository(store(), table), counters, now: Date.now });
  const hashItem = async (key: string) =>
    (await store().send(new GetCommand({ TableName: table, Key: { pk: `key#${hashSecret(key)}` }, ConsistentRead: true }))).Item;
  const record = async (keyId: string) =>
    (await store().send(new GetCommand({ TableName: table, Key: { pk: `keyid#${keyId}` }, ConsistentRead: true }))).Item!;
  const newKey = () => createKey(plain(), { name: 'k', projectId: 'p', scopes: ['*'], expiresAt: null });
  const isRecordUpdate = (command: unknown) =>
    command instanceof UpdateCommand && String((command.input.Key as { pk: string }).pk).startsWith('keyid#');
  const isGraceEnd = (command: unknown) =>
    command instanceof UpdateCommand && String(command.input.UpdateExpression).includes('valid_until_ms');
  const waitHeld = async (holding: { held(): number }) => {
    while (holding.held() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  it('leaves no value working when a revocation comes between a rotation and the grace end it sets', async () => {
    const key = await newKey();
    const holding = holdingClient(isGraceEnd);
    const rotating = rotateKey(holding.deps, key.key_id);
    await waitHeld(holding);
    await revokeKey(plain(), key.key_id);
    holding.release();
    const rotated = await rotating;

    expect(await hashItem(key.key)).toBeUndefined();
    expect(await hashItem(rotated.key)).toBeUndefined();
    expect(await record(key.key_id)).toMatchObject({ state: 'revoked' });
  });

  it('refuses a rotation whose record update comes after a revocation, and deletes the value it had prepared', async () => {
    const key = await newKey();
    const holding = holdingClient(isRecordUpdate);
    const rotating = rotateKey(holding.deps, key.key_id).catch((error: unknown) => error);
    await waitHeld(holding);
    await revokeKey(plain(), key.key_id);
    holding.release();

    expect(await rotating).toBeInstanceOf(ConflictError);
    expect(await hashItem(key.key)).toBeUndefined();
    expect(await record(key.key_id)).toMatchObject({ state: 'revoked', current_key_hash: hashSecret(key.key) });
    const { Count } = await store().send(
      new ScanCommand({
        TableName: table,
        FilterExpression: 'key_id = :id AND begins_with(pk, :hash)',
        ExpressionAttributeValues: { ':id': key.key_id, ':hash': 'key#' },
      }),
    );
    expect(Count).toBe(0);
  });

  it('lets one of two overlapping rotations win: the other answers 409 and leaves no value behind', async () => {
    const key = await newKey();
    const holding = holdingClient(isRecordUpdate);
    const first = rotateKey(holding.deps, key.key_id).catch((error: unknown) => error);
    await waitHeld(holding);
    const second = await rotateKey(plain(), key.key_id);
    holding.release();

    expect(await first).toBeInstanceOf(ConflictError);
    expect(await hashItem(second.key)).toMatchObject({ key_id: key.key_id });
    expect((await hashItem(key.key))?.valid_until_ms).toBeGreaterThan(Date.now());
    expect((await record(key.key_id)).retired_key_hashes).toEqual([{ hash: hashSecret(key.key), valid_until_ms: expect.any(Number) }]);
    const { Count } = await store().send(
      new ScanCommand({
        TableName: table,
        FilterExpression: 'key_id = :id AND begins_with(pk, :hash)',
        ExpressionAttributeValues: { ':id': key.key_id, ':hash': 'key#' },
      }),
    );
    expect(Count).toBe(2);
  });

  it('finishes a revocation that failed halfway when it is run again: the record still names every value', async () => {
    const key = await newKey();
    const second = await rotateKey(plain(), key.key_id);
    const third = await rotateKey(plain(), key.key_id);
    // The delete of a value only the record's list names fails: a second run can only find it there.
    const isDeleteOfSecond = (command: unknown) =>
      command instanceof DeleteCommand && (command.input.Key as { pk: string }).pk === `key#${hashSecret(second.key)}`;
    const failing = holdingClient(isDeleteOfSecond, new Error('throttled'));
    await expect(revokeKey(failing.deps, key.key_id)).rejects.toThrow('throttled');
    expect(await record(key.key_id)).toMatchObject({ state: 'revoked' });

    await revokeKey(plain(), key.key_id);
    for (const value of [key.key, second.key, third.key]) expect(await hashItem(value)).toBeUndefined();
  });

  it('carries the old value of a record rotated before the list existed into the list, and ends its grace as stored', async () => {
    const key = await newKey();
    const until = Date.now() + 3_600_000;
    // As rotations before `retired_key_hashes` left a key: the current value, and one predecessor in its grace.
    const legacy = 'wfk_legacy-value';
    await store().send(
      new PutCommand({ TableName: table, Item: { pk: `key#${hashSecret(legacy)}`, key_id: key.key_id, project_id: 'p', scopes: ['*'] } }),
    );
    await store().send(
      new UpdateCommand({
        TableName: table,
        Key: { pk: `keyid#${key.key_id}` },
        UpdateExpression: 'SET previous_key_hash = :hash, previous_valid_until_iso = :until',
        ExpressionAttributeValues: { ':hash': hashSecret(legacy), ':until': new Date(until).toISOString() },
      }),
    );

    await rotateKey(plain(), key.key_id);

    expect((await record(key.key_id)).retired_key_hashes).toEqual([
      { hash: hashSecret(legacy), valid_until_ms: until },
      { hash: hashSecret(key.key), valid_until_ms: expect.any(Number) },
    ]);
    expect(await hashItem(legacy)).toMatchObject({ valid_until_ms: until });
    await revokeKey(plain(), key.key_id);
    expect(await hashItem(legacy)).toBeUndefined();
  });

  it('drops from the list a value whose grace has ended', async () => {
    const key = await newKey();
    const second = await rotateKey(plain(), key.key_id);
    await store().send(
      new UpdateCommand({
        TableName: table,
        Key: { pk: `keyid#${key.key_id}` },
        UpdateExpression: 'SET retired_key_hashes = :retired',
        ExpressionAttributeValues: { ':retired': [{ hash: hashSecret(key.key), valid_until_ms: Date.now() - 1 }] },
      }),
    );
    await rotateKey(plain(), key.key_id);
    expect((await record(key.key_id)).retired_key_hashes).toEqual([{ hash: hashSecret(second.key), valid_until_ms: expect.any(Number) }]);
  });
});

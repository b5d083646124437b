import { ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from '#shared/errors.ts';
import type { CounterStore } from '#shared/store/counter-store.ts';
import { isConditionFailure } from '#shared/store/conditional-write.ts';
import { API_KEY_ROTATION_GRACE_MS, DEFAULT_MAX_OPEN_STREAMS_PER_KEY } from '#shared/limits.ts';
import { RATE_LIMITS, takeUnitOrRefuse } from '#shared/rate-limits.ts';
import { hashSecret, newId, newSecret, secretPrefix } from '#shared/secrets.ts';
import type { Scope } from '#shared/access.ts';
import { grants, type ApiKeyRecord, type GrantedScope, type KeyHashItem, type RetiredKeyHash } from './api-key-model.ts';
import type { ApiKeysRepository } from './api-keys-repository.ts';
import type { Caller } from '#shared/access.ts';

export interface ApiKeysDeps {
  keys: ApiKeysRepository;
  counters: CounterStore;
  now: () => number;
}

const KEY_PREFIX = 'wfk_';

const hashItemOf = (
  record: Pick<ApiKeyRecord, 'key_id' | 'project_id' | 'scopes' | 'expires_at_iso' | 'max_open_streams'>,
): KeyHashItem => ({
  key_id: record.key_id,
  project_id: record.project_id,
  scopes: record.scopes,
  key_expires_at_ms: record.expires_at_iso ? Date.parse(record.expires_at_iso) : undefined,
  max_open_streams: record.max_open_streams,
});

export async function createKey(
  deps: ApiKeysDeps,
  request: { name: string; projectId: string; scopes: GrantedScope[]; expiresAt: string | null; maxOpenStreams?: number },
) {
  const key = newSecret(KEY_PREFIX);
  const record: ApiKeyRecord = {
    key_id: newId('key_'),
    name: request.name,
    project_id: request.projectId,
    scopes: [...new Set(request.scopes)],
    expires_at_iso: request.expiresAt,
    state: 'active',
    max_open_streams: request.maxOpenStreams ?? DEFAULT_MAX_OPEN_STREAMS_PER_KEY,
    prefix: secretPrefix(key, KEY_PREFIX.length),
    created_at: new Date(deps.now()).toISOString(),
    current_key_hash: hashSecret(key),
  };
  await deps.keys.create(record, hashItemOf(record));
  return {
    key_id: record.key_id,
    key,
    name: record.name,
    project_id: record.project_id,
    scopes: record.scopes,
    expires_at: record.expires_at_iso,
    max_open_streams: record.max_open_streams,
  };
}

/** A key that can still change: not revoked, and not past its expiry date (both end a key for good). */
async function activeRecord(deps: ApiKeysDeps, keyId: string): Promise<ApiKeyRecord> {
  const record = await deps.keys.getRecord(keyId);
  if (!record) throw new NotFoundError(`API key ${keyId} not found`);
  if (record.state !== 'active') throw new ConflictError(`API key ${keyId} is revoked`);
  if (isExpired(record, deps.now())) throw new ConflictError(`API key ${keyId} is expired`);
  return record;
}

const isExpired = (record: Pick<ApiKeyRecord, 'expires_at_iso'>, now: number) =>
  record.expires_at_iso !== null && Date.parse(record.expires_at_iso) <= now;

/**
 * A new value for the key. The value it replaces keeps working for 24 hours, and so does each value replaced before
 * it within its own 24 hours: rotating twice in a day does not cut the first old value off.
 */
export async function rotateKey(deps: ApiKeysDeps, keyId: string) {
  const record = await activeRecord(deps, keyId);
  const key = newSecret(KEY_PREFIX);
  const now = deps.now();
  const previousValidUntilMs = now + API_KEY_ROTATION_GRACE_MS;
  const stillInGrace = retiredHashes(record).filter((entry) => entry.valid_until_ms > now);
  const retired = [...stillInGrace, { hash: record.current_key_hash, valid_until_ms: previousValidUntilMs }];
  if (!(await deps.keys.rotate(record, hashSecret(key), hashItemOf(record), previousValidUntilMs, retired))) {
    throw new ConflictError(`API key ${keyId} changed while it was being rotated (revoked or rotated again); read it and retry`);
  }
  return { key_id: keyId, key, scopes: record.scopes, previous_valid_until: new Date(previousValidUntilMs).toISOString() };
}

/** The rotated-away values a record names, including the one a record from before `retired_key_hashes` kept alone. */
function retiredHashes(record: ApiKeyRecord): RetiredKeyHash[] {
  const retired = record.retired_key_hashes ?? [];
  const until = record.previous_valid_until_iso ?? record.previous_valid_until;
  if (!record.previous_key_hash || !until || retired.some((entry) => entry.hash === record.previous_key_hash)) return retired;
  return [...retired, { hash: record.previous_key_hash, valid_until_ms: Date.parse(until) }];
}

export async function revokeKey(deps: ApiKeysDeps, keyId: string) {
  try {
    await deps.keys.revoke(keyId);
  } catch (error) {
    if (isConditionFailure(error)) throw new NotFoundError(`API key ${keyId} not found`);
    throw error;
  }
  return { key_id: keyId, state: 'revoked' };
}

export async function listKeys(deps: ApiKeysDeps, projectId?: string) {
  const now = deps.now();
  const records = (await deps.keys.listRecords()).filter((record) => !projectId || record.project_id === projectId);
  return {
    keys: records.map((record) => ({
      key_id: record.key_id,
      name: record.name,
      project_id: record.project_id,
      scopes: record.scopes,
      prefix: record.prefix,
      created_at: record.created_at,
      expires_at: record.expires_at_iso,
      state: record.state === 'active' && isExpired(record, now) ? 'expired' : record.state,
      max_open_streams: record.max_open_streams ?? DEFAULT_MAX_OPEN_STREAMS_PER_KEY,
      // A revoked record still names its old values (so a revocation can be finished), but none works any more.
      previous_valid_until: record.state === 'active' ? (record.previous_valid_until_iso ?? record.previous_valid_until ?? null) : null,
    })),
  };
}

/**
 * Authenticates `Authorization: Bearer <key>` (functions/published/README.md#the-contract-in-brief): one read of the
 * key's hash item, then the per-key rate limit, then the scope. Every refusal says what to fix without saying which
 * keys exist.
 */
export async function authenticate(deps: ApiKeysDeps, authorization: string | undefined, needed: Scope): Promise<Caller> {
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
  if (!presented) throw new UnauthorizedError('Missing or malformed Authorization header; expected "Bearer <API key>"');
  const item = await deps.keys.findByHash(hashSecret(presented));
  const now = deps.now();
  if (!item) throw new UnauthorizedError('Invalid or revoked API key');
  if (item.key_expires_at_ms !== undefined && item.key_expires_at_ms <= now) throw new UnauthorizedError('API key expired');
  if (item.valid_until_ms !== undefined && item.valid_until_ms <= now)
    throw new UnauthorizedError('API key was rotated and its grace period ended');

  await takeUnitOrRefuse(deps.counters, RATE_LIMITS.requestsPerKeyPerMinute, item.key_id, now);

  if (!grants(item.scopes, needed)) throw new ForbiddenError(`API key lacks the scope ${needed}`);
  return { projectId: item.project_id, keyId: item.key_id, maxOpenStreams: item.max_open_streams ?? DEFAULT_MAX_OPEN_STREAMS_PER_KEY };
}

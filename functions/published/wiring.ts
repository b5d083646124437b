import { dynamo } from '#shared/clients/dynamodb.ts';
import { requireEnv } from '#shared/config.ts';
import { createCounterStore } from '#shared/counter-store.ts';
import { EXECUTE_HEARTBEAT_INTERVAL_MS } from '#shared/limits.ts';
import { TABLE_ENV } from '#shared/resources.ts';
import { createApiKeysRepository } from './api-keys-repository.ts';
import type { ApiKeysDeps } from './api-keys-service.ts';

/** What authenticating a caller needs: the keys, the per-key rate counters, a clock. */
export function apiKeysFromEnv(): ApiKeysDeps {
  return {
    keys: createApiKeysRepository(dynamo, requireEnv(TABLE_ENV.apiKeys)),
    counters: createCounterStore(dynamo, requireEnv(TABLE_ENV.counters)),
    now: Date.now,
  };
}

const HEARTBEAT_ENV = 'EXECUTE_HEARTBEAT_MS';

/** The blocking execute's whitespace interval: 20 s on AWS; tests with a shortened idle limit set it lower. */
export function executeHeartbeatFromEnv(): number {
  const raw = process.env[HEARTBEAT_ENV];
  if (raw === undefined || raw.trim() === '') return EXECUTE_HEARTBEAT_INTERVAL_MS;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > EXECUTE_HEARTBEAT_INTERVAL_MS) {
    throw new Error(`${HEARTBEAT_ENV} must be a whole number of milliseconds from 1 to ${EXECUTE_HEARTBEAT_INTERVAL_MS}`);
  }
  return value;
}

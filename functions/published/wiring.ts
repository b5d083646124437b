import { dynamo } from '#shared/clients/dynamodb.ts';
import { requireEnv, shortenedMilliseconds } from '#shared/config.ts';
import { createCounterStore } from '#shared/store/counter-store.ts';
import { EXECUTE_HEARTBEAT_INTERVAL_MS, MAX_STREAM_MS, STREAM_HEARTBEAT_INTERVAL_MS } from '#shared/limits.ts';
import type { EventStreamTiming } from './event-stream-response.ts';
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

/** The blocking execute's whitespace interval: 20 s on AWS; tests with a shortened idle limit set it lower. */
export function executeHeartbeatFromEnv(): number {
  return shortenedMilliseconds('EXECUTE_HEARTBEAT_MS', EXECUTE_HEARTBEAT_INTERVAL_MS);
}

/** SSE routes: the comment heartbeat and the stream's own length, both shortened only by tests. */
export function eventStreamTimingFromEnv(): EventStreamTiming {
  return {
    heartbeatMs: shortenedMilliseconds('STREAM_HEARTBEAT_MS', STREAM_HEARTBEAT_INTERVAL_MS),
    maxStreamMs: shortenedMilliseconds('STREAM_MAX_MS', MAX_STREAM_MS),
  };
}

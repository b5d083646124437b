import { dynamo } from '#shared/clients/dynamodb.ts';
import { requireEnv, shortenedMilliseconds } from '#shared/config.ts';
import { createCounterStore } from '#shared/store/counter-store.ts';
import { EXECUTE_HEARTBEAT_INTERVAL_MS, STREAM_HEARTBEAT_INTERVAL_MS, STREAM_SLOW_READER_MS } from '#shared/limits.ts';
import type { JsonHeartbeat } from '#shared/http/http-stack.ts';
import { streamFlushPaddingFromEnv } from '#shared/http/stream-padding.ts';
import { maxOpenStreamsFromEnv, streamWindowMsFromEnv } from '#shared/http/stream-settings.ts';
import type { EventStreamSettings } from './event-stream-response.ts';
import { TABLE_ENV } from '#shared/resources.ts';
import { createApiKeysRepository } from './api-keys-repository.ts';
import type { ApiKeysDeps } from './api-keys-service.ts';
import { createOpenStreamsRepository } from './open-streams-repository.ts';
import type { OpenStreamsDeps } from './open-streams.ts';

/** What authenticating a caller needs: the keys, the per-key rate counters, a clock. */
export function apiKeysFromEnv(): ApiKeysDeps {
  return {
    keys: createApiKeysRepository(dynamo, requireEnv(TABLE_ENV.apiKeys)),
    counters: createCounterStore(dynamo, requireEnv(TABLE_ENV.counters)),
    now: Date.now,
  };
}

/**
 * The blocking execute's whitespace: every 25 s on AWS (tests with a shortened idle limit set it lower), as much of it
 * as the deployment's padding (STREAM_FLUSH_PADDING_BYTES; a bad value fails the cold start).
 */
export function executeHeartbeatFromEnv(): JsonHeartbeat {
  return {
    intervalMs: shortenedMilliseconds('EXECUTE_HEARTBEAT_MS', EXECUTE_HEARTBEAT_INTERVAL_MS),
    paddingBytes: streamFlushPaddingFromEnv(),
  };
}

/**
 * SSE routes: the comment heartbeat and the slow reader's bound (both shortened only by tests), the deployment's stream
 * window (STREAM_WINDOW_SECONDS; tests shorten it further with STREAM_MAX_MS) and its padding
 * (STREAM_FLUSH_PADDING_BYTES). A bad value fails the cold start.
 */
export function eventStreamSettingsFromEnv(): EventStreamSettings {
  return {
    heartbeatMs: shortenedMilliseconds('STREAM_HEARTBEAT_MS', STREAM_HEARTBEAT_INTERVAL_MS),
    maxStreamMs: shortenedMilliseconds('STREAM_MAX_MS', streamWindowMsFromEnv()),
    slowReaderMs: shortenedMilliseconds('STREAM_SLOW_READER_MS', STREAM_SLOW_READER_MS),
    paddingBytes: streamFlushPaddingFromEnv(),
  };
}

/** Open streams: leases in the stream events table, the deployment's limit (MAX_OPEN_STREAMS; a bad value fails the cold start). */
export function openStreamsFromEnv(): OpenStreamsDeps {
  return {
    slots: createOpenStreamsRepository(dynamo, requireEnv(TABLE_ENV.streamEvents)),
    now: Date.now,
    deploymentLimit: maxOpenStreamsFromEnv(),
  };
}

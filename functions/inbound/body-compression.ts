import { constants, gzipSync } from 'node:zlib';
import { INLINE_BODY_MAX_BYTES } from '#shared/limits.ts';

/**
 * How much larger the fastest level's output may be than the default level's on chat text: up to 1.32 on Russian
 * dialogs, 1.10 on English (measured on dialogs whose default-level body is 8-16 KB).
 */
const FAST_LEVEL_GROWTH = 1.5;

/**
 * The received body, gzip-compressed, for storing. The fastest level costs a 2000-message dialog 2-3 ms where the
 * default level cost 5-16 ms, for an output 5-35 % larger; a larger body only matters where it would no longer fit
 * inside the event's item (INLINE_BODY_MAX_BYTES), which would cost the request a second write. So a body the fast
 * level leaves just above that limit is compressed again at the default level, as it always was, and every body
 * that was stored inline still is.
 */
export function compressBody(raw: Buffer): Buffer {
  const fast = gzipSync(raw, { level: constants.Z_BEST_SPEED });
  if (fast.byteLength <= INLINE_BODY_MAX_BYTES || fast.byteLength > INLINE_BODY_MAX_BYTES * FAST_LEVEL_GROWTH) return fast;
  const tight = gzipSync(raw);
  return tight.byteLength < fast.byteLength ? tight : fast;
}

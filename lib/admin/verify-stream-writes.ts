import { performance } from 'node:perf_hooks';
import { routePath } from '#functions/routes.ts';
import {
  AT_ONCE_TOLERANCE,
  CheckFailure,
  PROBE_HOLD_MS,
  PROBE_SIZES,
  REPORTED_HOLD_BYTES,
  shortText,
  type CheckOutcome,
  type VerifyCheck,
  type VerifyContext,
} from './verify-check.ts';
import { answered, openRequest, unreachable } from './verify-http.ts';

/** One probe as the client saw it: when the first `bytes` bytes and the end arrived, on the client's clock only. */
export interface ProbeArrival {
  bytes: number;
  holdMs: number;
  /** Milliseconds from the request to the arrival of the first `bytes` bytes of the body. */
  firstBytesAtMs: number;
  /** Milliseconds from the request to the end of the body. */
  endAtMs: number;
}

export interface ProbeJudgement {
  bytes: number;
  /** About how long the write waited somewhere before it reached the client. */
  held_ms: number;
  reached_at_once: boolean;
}

/**
 * Whether a write reached the client at once: the function wrote `bytes`, waited `holdMs`, then ended, so a prompt
 * write arrives about `holdMs` before the end, and a held one with it. Only the gap between two arrivals on the same
 * clock counts: nothing here compares the function's clock with the client's.
 */
export function judgeProbe(arrival: ProbeArrival): ProbeJudgement {
  const gap = arrival.endAtMs - arrival.firstBytesAtMs;
  return {
    bytes: arrival.bytes,
    held_ms: Math.max(0, Math.round(arrival.holdMs - gap)),
    reached_at_once: gap >= arrival.holdMs * (1 - AT_ONCE_TOLERANCE),
  };
}

/**
 * The padding the streams need after a write that must arrive: the smallest measured size that reached the client at
 * once (0 when a single byte did), or undefined when none of them did.
 */
export function recommendedPadding(judgements: readonly ProbeJudgement[]): number | undefined {
  const prompt = judgements.filter((judgement) => judgement.reached_at_once).map((judgement) => judgement.bytes);
  if (prompt.length === 0) return undefined;
  const smallest = Math.min(...prompt);
  return smallest === 1 ? 0 : smallest;
}

const sizeText = (bytes: number) => (bytes < 1024 ? `${bytes} B` : `${bytes / 1024} KB`);

/**
 * The check's outcome from its judgements: a measurement, so it passes (or warns when every size was held), naming the
 * deployment setting that applies it (`cdk deploy -c streamFlushPaddingBytes=N`, STREAM_FLUSH_PADDING_BYTES on the
 * streaming functions, 0 by default).
 */
export function streamWritesOutcome(judgements: readonly ProbeJudgement[]): CheckOutcome {
  const padding = recommendedPadding(judgements);
  const sizes = judgements
    .map((judgement) => `${sizeText(judgement.bytes)} ${judgement.reached_at_once ? 'at once' : `held ~${judgement.held_ms} ms`}`)
    .join(', ');
  if (padding === undefined) {
    const largest = sizeText(Math.max(...judgements.map((judgement) => judgement.bytes)));
    return {
      status: 'warn',
      detail:
        `${sizes}: writes up to ${largest} are held on their way to the client; pad the streams past the largest hold reported: cdk ` +
        `deploy -c streamFlushPaddingBytes=${REPORTED_HOLD_BYTES}`,
      sizes: judgements,
      recommendation: null,
    };
  }
  const recommendation = { padding_bytes: padding };
  const advice =
    padding === 0
      ? 'the streams need no filler (-c streamFlushPaddingBytes=0, the default)'
      : `${sizeText(padding)} of filler will do: cdk deploy -c streamFlushPaddingBytes=${padding}`;
  return {
    status: 'pass',
    detail: `${sizes}: a write of ${padding === 0 ? 'any size' : sizeText(padding)} reaches the client at once, so ${advice}`,
    sizes: judgements,
    recommendation,
  };
}

/**
 * `stream-writes`: how long a streamed write of each PROBE_SIZES takes to reach the client through the stage, with
 * the stream probe (`GET /diagnostics/stream-probe`, the temporary key). The probes run side by side: each is a
 * connection of its own, measured on its own.
 */
export const streamWritesCheck: VerifyCheck = {
  name: 'stream-writes',
  async run(context): Promise<CheckOutcome> {
    const key = await context.project.key();
    context.status(`stream-writes: ${PROBE_SIZES.length} probes of ${PROBE_HOLD_MS} ms`);
    const arrivals = await Promise.all(PROBE_SIZES.map((bytes) => probe(context, key, bytes, PROBE_HOLD_MS)));
    return streamWritesOutcome(arrivals.map(judgeProbe));
  },
};

async function probe(context: VerifyContext, key: string, bytes: number, holdMs: number): Promise<ProbeArrival> {
  const path = `${routePath('PublishedStreamProbe', {})}?bytes=${bytes}&hold_ms=${holdMs}`;
  const sentAt = performance.now();
  let firstBytesAtMs: number | undefined;
  let received = 0;
  const chunks: Buffer[] = [];
  let status: number;
  try {
    const response = await openRequest(context, path, { headers: { authorization: `Bearer ${key}` }, timeoutMs: holdMs + 60_000 });
    status = response.status;
    if (status !== 200 || !response.body) {
      throw new CheckFailure(
        `GET ${path} to stream the probe (200 text/event-stream)`,
        answered({ status, text: await response.text() }),
        FIX_PROBE,
      );
    }
    for await (const chunk of response.body as ReadableStream<Uint8Array>) {
      received += chunk.byteLength;
      chunks.push(Buffer.from(chunk));
      if (firstBytesAtMs === undefined && received >= bytes) firstBytesAtMs = performance.now() - sentAt;
    }
  } catch (error) {
    if (error instanceof CheckFailure) throw error;
    throw unreachable(context, 'GET', path, error);
  }
  const endAtMs = performance.now() - sentAt;
  const body = Buffer.concat(chunks).toString('utf8');
  if (firstBytesAtMs === undefined || !body.includes('event: end')) {
    throw new CheckFailure(
      `GET ${path} to send ${bytes} bytes, then its end event`,
      `${received} bytes: ${shortText(body.slice(bytes))}`,
      FIX_PROBE,
    );
  }
  return { bytes, holdMs, firstBytesAtMs, endAtMs };
}

const FIX_PROBE = 'The stream probe is part of this version: deploy it (npx cdk deploy; locally restart npm start) and verify again';

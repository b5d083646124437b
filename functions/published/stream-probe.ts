import { ValidationError } from '#shared/errors.ts';
import { toFieldIssues } from '#shared/http/field-issues.ts';
import {
  STREAM_PROBE_DEFAULT_BYTES,
  STREAM_PROBE_DEFAULT_HOLD_MS,
  STREAM_PROBE_MAX_BYTES,
  STREAM_PROBE_MAX_HOLD_MS,
  STREAM_PROBE_MIN_BYTES,
} from '#shared/limits.ts';
import * as z from '#shared/zod.ts';
import { sseEvent } from './event-stream-response.ts';

/*
 * The stream probe (GET /diagnostics/stream-probe): what it writes, in which order, and the hold between. It measures
 * the raw response-streaming path, so it writes exactly what it is asked and none of the heartbeat or filler of the
 * product's streams (event-stream-response.ts). Sleeping is injected: this module has no timers.
 */

const wholeNumber = (min: number, max: number) => {
  const error = `must be a whole number from ${min} to ${max}`;
  return z.int({ error }).check(z.minimum(min, { error }), z.maximum(max, { error }));
};

const probeBytes = wholeNumber(STREAM_PROBE_MIN_BYTES, STREAM_PROBE_MAX_BYTES);
const probeHoldMs = wholeNumber(0, STREAM_PROBE_MAX_HOLD_MS);

/** The query, as numbers: what is validated, and what the OpenAPI document shows (bounds and defaults). */
export const streamProbeQuerySchema = z.object({
  bytes: z._default(probeBytes, STREAM_PROBE_DEFAULT_BYTES),
  hold_ms: z._default(probeHoldMs, STREAM_PROBE_DEFAULT_HOLD_MS),
});

export type StreamProbe = z.output<typeof streamProbeQuerySchema>;

/** The `data` of the probe's one event, `end`: the probe as it ran. */
export const streamProbeEndSchema = z.object({
  bytes: probeBytes.check(z.meta({ description: 'The size of the first write, in bytes' })),
  hold_ms: probeHoldMs.check(z.meta({ description: 'How long the function wrote nothing after it, in milliseconds' })),
});

/** Decimal digits only (no sign, exponent, hex or blanks); anything else reaches the schema as text and is refused. */
const DIGITS = /^\d{1,15}$/;

/** The probe a query string asks for; a value out of bounds or not a whole number is a 400 naming its parameter. */
export function streamProbeOf(query: Readonly<Record<string, string | undefined>> | null): StreamProbe {
  const numbers: Record<string, number | string> = {};
  for (const name of ['bytes', 'hold_ms'] as const) {
    const text = query?.[name];
    if (text !== undefined) numbers[name] = DIGITS.test(text) ? Number(text) : text;
  }
  const parsed = streamProbeQuerySchema.safeParse(numbers);
  if (!parsed.success) throw new ValidationError(toFieldIssues(parsed.error));
  return parsed.data;
}

/** Clients skip it: the start of an SSE comment line, `:` and then filler (the spaces of the product's own filler). */
export function probeOpening(bytes: number): string {
  return `:${' '.repeat(bytes - 1)}`;
}

/** Ends the comment line, then the one event: `end`, its data the probe as asked. */
export function probeEnd(probe: StreamProbe): string {
  const data: z.output<typeof streamProbeEndSchema> = { bytes: probe.bytes, hold_ms: probe.hold_ms };
  return `\n\n${sseEvent({ event: 'end', data })}`;
}

export interface ProbeIo {
  /** One write of the response body, as it is given (never split, joined or padded). */
  write(text: string): void;
  /** Resolves after `ms` (earlier when the caller has gone: the rest is then written to nobody). */
  hold(ms: number): Promise<void>;
}

/** The probe, whole: exactly `bytes` bytes as one write, nothing for `hold_ms`, then the end event as a second write. */
export async function runStreamProbe(probe: StreamProbe, io: ProbeIo): Promise<void> {
  io.write(probeOpening(probe.bytes));
  await io.hold(probe.hold_ms);
  io.write(probeEnd(probe));
}

import { describe, expect, it } from 'vitest';
import { runStreamProbe, streamProbeOf, type StreamProbe } from '#published/stream-probe.ts';
import { ValidationError } from '#shared/errors.ts';
import {
  STREAM_PROBE_DEFAULT_BYTES,
  STREAM_PROBE_DEFAULT_HOLD_MS,
  STREAM_PROBE_MAX_BYTES,
  STREAM_PROBE_MAX_HOLD_MS,
  STREAM_PROBE_MARGIN_MS,
  STREAM_PROBE_TIMEOUT_SECONDS,
} from '#shared/limits.ts';
import { routeById, routeTimeoutSeconds, routes } from '#functions/routes.ts';

/** Runs the probe against a recording of what it does: each write and each hold, in order; the holds end at once. */
async function recorded(probe: StreamProbe) {
  const steps: ({ write: string } | { hold: number })[] = [];
  await runStreamProbe(probe, {
    write: (text) => steps.push({ write: text }),
    hold: (ms) => {
      steps.push({ hold: ms });
      return Promise.resolve();
    },
  });
  return steps;
}

const refusal = (query: Record<string, string>) => {
  try {
    streamProbeOf(query);
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('the stream probe', () => {
  it('writes exactly `bytes` bytes first, as one write, then holds, then ends the comment and sends `end`', async () => {
    const steps = await recorded({ bytes: 16, hold_ms: 2000 });

    expect(steps).toEqual([
      { write: `:${' '.repeat(15)}` },
      { hold: 2000 },
      { write: '\n\nevent: end\ndata: {"bytes":16,"hold_ms":2000}\n\n' },
    ]);
  });

  it('makes the first write the size asked, from one byte to the largest, with no newline in it', async () => {
    for (const bytes of [1, 1024, 16 * 1024, 64 * 1024, STREAM_PROBE_MAX_BYTES]) {
      const [first] = await recorded({ bytes, hold_ms: 0 });
      const text = (first as { write: string }).write;

      expect(Buffer.byteLength(text), String(bytes)).toBe(bytes);
      expect(text.startsWith(':'), String(bytes)).toBe(true);
      expect(text, String(bytes)).not.toMatch(/[\r\n]/);
    }
  });

  it('asks the injected sleep for the hold it was given, zero included, and nothing else', async () => {
    for (const hold_ms of [0, 1, STREAM_PROBE_MAX_HOLD_MS]) {
      const holds = (await recorded({ bytes: 1, hold_ms })).filter((step) => 'hold' in step);

      expect(holds).toEqual([{ hold: hold_ms }]);
    }
  });

  it('adds no heartbeat, filler or padding: the body is the two writes and nothing more', async () => {
    const steps = await recorded({ bytes: 1, hold_ms: 5 });
    const body = steps.flatMap((step) => ('write' in step ? [step.write] : [])).join('');

    expect(body).toBe(':\n\nevent: end\ndata: {"bytes":1,"hold_ms":5}\n\n');
  });
});

describe("the stream probe's query", () => {
  it('defaults to one byte held two seconds', () => {
    expect(streamProbeOf(null)).toEqual({ bytes: STREAM_PROBE_DEFAULT_BYTES, hold_ms: STREAM_PROBE_DEFAULT_HOLD_MS });
    expect(streamProbeOf({})).toEqual({ bytes: 1, hold_ms: 2000 });
    expect(streamProbeOf({ other: 'x' })).toEqual({ bytes: 1, hold_ms: 2000 });
  });

  it('takes whole numbers within the bounds, each end included', () => {
    expect(streamProbeOf({ bytes: '1', hold_ms: '0' })).toEqual({ bytes: 1, hold_ms: 0 });
    expect(streamProbeOf({ bytes: '262144', hold_ms: '10000' })).toEqual({ bytes: 262144, hold_ms: 10000 });
    expect(streamProbeOf({ bytes: '65536' })).toEqual({ bytes: 65536, hold_ms: 2000 });
  });

  it('refuses bytes out of 1..262144 or not a whole number with 400 naming bytes', () => {
    for (const bytes of ['0', '262145', 'abc', '', '-1', '1.5', '1e3', '0x10', ' 5', '99999999999999999999']) {
      const error = refusal({ bytes });

      expect(error, JSON.stringify(bytes)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details, JSON.stringify(bytes)).toEqual([
        { field: 'bytes', message: 'must be a whole number from 1 to 262144' },
      ]);
    }
  });

  it('refuses hold_ms out of 0..10000 or not a whole number with 400 naming hold_ms', () => {
    for (const hold_ms of ['10001', '-1', 'soon', '2.5']) {
      const error = refusal({ hold_ms });

      expect(error, hold_ms).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details, hold_ms).toEqual([
        { field: 'hold_ms', message: 'must be a whole number from 0 to 10000' },
      ]);
    }
  });

  it("times out at its own bound (the longest hold plus a margin), not at the 15 minutes of the product's streams", () => {
    // CDK sets the function's timeout and the integration's from routeTimeoutSeconds; the twin's Lambda host too.
    const probeRoute = routeById('PublishedStreamProbe');

    expect(routeTimeoutSeconds(probeRoute)).toBe(STREAM_PROBE_TIMEOUT_SECONDS);
    expect(STREAM_PROBE_TIMEOUT_SECONDS * 1000).toBe(STREAM_PROBE_MAX_HOLD_MS + STREAM_PROBE_MARGIN_MS);
    for (const route of routes.filter((other) => other.streaming && other.id !== probeRoute.id)) {
      expect([route.id, routeTimeoutSeconds(route)]).toEqual([route.id, 15 * 60]);
    }
  });

  it('names both parameters when both are wrong', () => {
    const error = refusal({ bytes: '0', hold_ms: '10001' }) as ValidationError;

    expect(error.details.map((issue) => issue.field)).toEqual(['bytes', 'hold_ms']);
  });
});

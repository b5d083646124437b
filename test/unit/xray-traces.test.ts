import { describe, expect, it } from 'vitest';
import { monthlyTraces, recordedTraces } from '#lib/pricing/xray-traces.ts';

/**
 * Lambda's active tracing records "the first request each second, and 5 percent of additional requests"
 * (docs.aws.amazon.com/lambda/latest/dg/services-xray.html); AWS bills $5.00 per million traces recorded
 * (aws.amazon.com/xray/pricing). A 30-day month has 2,592,000 seconds.
 */
describe('X-Ray traces of a month', () => {
  it('are every request while there are fewer requests than seconds', () => {
    expect(recordedTraces(0)).toBe(0);
    expect(recordedTraces(1_000_000)).toBe(1_000_000);
    expect(recordedTraces(2_592_000)).toBe(2_592_000);
  });

  it('are one a second and 5 % of the rest beyond', () => {
    expect(recordedTraces(102_592_000)).toBeCloseTo(2_592_000 + 5_000_000, 6);
  });

  it('start at the events function for events, and at the execute function and the state machine for each execution', () => {
    expect(monthlyTraces({ events: 600_000, dialogs: 400_000, runs: 10_000 })).toBe(1_000_000 + 20_000);
    // A million call events a month, recorded whole: $5 of traces, more than their API Gateway requests at REST's $3.50.
    expect(monthlyTraces({ events: 1_000_000, dialogs: 0, runs: 0 }) * 0.000005).toBeCloseTo(5, 9);
  });
});

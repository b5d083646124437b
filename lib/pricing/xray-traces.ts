/**
 * X-Ray traces, which every function and both state machines record (active tracing) and AWS bills per trace
 * recorded. No request can meter them: Lambda decides by sampling, the first request each second and 5 % of the rest,
 * per function (docs.aws.amazon.com/lambda/latest/dg/services-xray.html), and Step Functions by the account's default
 * rule, the same. So they are forecast from a month's traffic, spread evenly over its seconds: a month with fewer
 * requests than seconds records every one.
 */
const XRAY_RESERVOIR_PER_SECOND = 1;
const XRAY_FIXED_RATE = 0.05;
const MONTH_SECONDS = 30 * 86_400;

/** Traces one traced entry point records in a 30-day month of `requests`, evenly spread. */
export function recordedTraces(requests: number): number {
  const reservoir = XRAY_RESERVOIR_PER_SECOND * MONTH_SECONDS;
  return Math.min(requests, reservoir) + XRAY_FIXED_RATE * Math.max(0, requests - reservoir);
}

/**
 * A month's traces: each trace starts where a request enters (a step, a callback, a collection batch joins the trace of
 * its state machine execution): the events function for call events and dialogs, and for each execution the execute
 * function and the workflow state machine. Approvals, polls and streams add a trace each, which this leaves out.
 */
export function monthlyTraces(volumes: { events: number; dialogs: number; runs: number }): number {
  return Math.round(recordedTraces(volumes.events + volumes.dialogs) + 2 * recordedTraces(volumes.runs));
}

export const TRACES_FORMULA =
  `min(R, ${(XRAY_RESERVOIR_PER_SECOND * MONTH_SECONDS).toLocaleString('en-US')}) + ${XRAY_FIXED_RATE * 100} % of the rest, ` +
  'for R = events + dialogs (the events function), and twice for R = executions (execute function, state machine)';

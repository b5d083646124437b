import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nightlySweepId } from '#collection/collection-sweeps.ts';
import { executionArnOf } from '#shared/execution-arn.ts';
import { parseTwinFaults, type FaultPlan } from '#lib/twin/faults.ts';
import { startLocalTwin, type LocalTwin } from '#lib/twin/twin.ts';
import { retryingClient } from './client.ts';
import { failureBound, tallyFaults, type FaultRecord } from './fault-tally.ts';
import { checkInvariants, type FinalStatuses, type Violation } from './invariants.ts';
import { settle } from './settle.ts';
import { readStoredState } from './stored-state.ts';
import { collectThroughCli, prepareTraffic, runTraffic, type TrafficRecord, type TrafficSetup, type TrafficTarget } from './traffic.ts';

/** The setting the chaos suite runs with unless told otherwise: every kind of fault the twin injects, at once. */
export const EXAMPLE_FAULTS =
  'dynamodb:throttle=0.05,dynamodb:error=0.02,s3:error=0.05,sfn:throttle=0.05,bedrock:throttle=0.1,ssm:throttle=0.05,lambda:error=0.01,lambda:crash-after-write=0.02,lambda:delay=200ms@0.1';

export interface ChaosOptions {
  faults: string;
  seed: number;
  durationMs: number;
  /** See TrafficOptions.minAnswers. */
  minAnswers?: number;
  concurrency: number;
  /** How long the executions, sweeps and callbacks get to finish after the traffic. */
  settleMs: number;
  collectEveryMs?: number;
  /** Only the short suite shortens the state machines' Retry intervals. */
  retryIntervalMs?: number;
  /** A line now and then on how it is going (run.ts prints them on stderr). */
  progress?: (line: string) => void;
}

export interface ChaosRun {
  report: ChaosReport;
  violations: Violation[];
  /** Checks the invariants again; `settle` first lets what was sent since the traffic settle (the suite's own defect checks). */
  recheck(options?: { settle?: boolean }): Promise<Violation[]>;
  record: TrafficRecord;
  setup: TrafficSetup;
  twin: LocalTwin;
  faults: FaultPlan;
  dataDir: string;
  close(keepData?: boolean): Promise<void>;
}

interface ChaosReport {
  seed: number;
  seconds: number;
  requests: number;
  retries: number;
  dropped: number;
  /** How many of each kind of request the mix sent. */
  kinds: Record<string, number>;
  statuses: Record<string, number>;
  /** Refusals by request and status (`execute echo 503`), to see where the faults surfaced. */
  refusals: Record<string, number>;
  faults: Record<string, number>;
  acknowledged_events: number;
  duplicates: number;
  runs: number;
  /** Final statuses by workflow (`echo completed`). */
  final_statuses: Record<string, number>;
  /** Per fault kind, the faults that hit the engine and the failed executions they can account for. */
  failure_bound: Record<string, { faults: number; failures: number }>;
  /** Callbacks by receiver kind and outcome (`late accepted`), and the attempts they took. */
  callbacks: Record<string, number>;
  streams: number;
  stream_resumes: number;
  subscriptions: number;
  collections: number;
  nightly_sweeps: number;
  /** Throttles the nightly trigger's Step Functions starts met (each start of a sweep a draw). */
  nightly_throttles: number;
  tool_calls: number;
  /** Requests the API never answered within REQUEST_TIMEOUT_MS (each also a violation). */
  unanswered: number;
  violations: number;
  by_invariant: Record<string, number>;
}

/** Starts a twin with the faults, drives the mix, lets it settle, and checks every invariant. */
export async function runChaos(options: ChaosOptions): Promise<ChaosRun> {
  // The mix's callback receiver, recording host and tool server are on loopback, which only these test settings allow.
  process.env.ALLOW_LOOPBACK_CALLBACKS = '1';
  process.env.ALLOW_LOOPBACK_RECORDINGS = '1';
  process.env.ALLOW_LOOPBACK_TOOLS = '1';
  const dataDir = mkdtempSync(join(tmpdir(), 'chaos-'));
  const faults = parseTwinFaults(options.faults, String(options.seed))!;
  const tally = tallyFaults(faults);
  const twin = await startLocalTwin({ dataDir, host: '127.0.0.1', port: 0, faults, retryIntervalMs: options.retryIntervalMs });
  let setup: TrafficSetup | undefined;
  const target: TrafficTarget = {
    url: twin.url,
    webhookUrl: twin.webhookUrl,
    dataDir,
    collect: collectThroughCli,
    nightly: () => nightly(twin, setup?.links.map((link) => link.taskId) ?? []),
  };
  try {
    const startedAt = Date.now();
    setup = await prepareTraffic(target);
    const progress = options.progress ?? (() => undefined);
    const client = retryingClient();
    const ticker = setInterval(() => {
      const oldest = client.oldestInFlight();
      const waiting =
        oldest && oldest.forMs > 30_000
          ? `; waiting ${Math.round(oldest.forMs / 1000)} s for ${oldest.label} ${new URL(oldest.url).pathname}`
          : '';
      progress(`traffic: ${client.ledger.answers.length} answers, faults ${JSON.stringify(twin.faultCounts())}${waiting}`);
    }, 10_000);
    const traffic = await runTraffic(target, {
      durationMs: options.durationMs,
      seed: options.seed,
      concurrency: options.concurrency,
      collectEveryMs: options.collectEveryMs,
      minAnswers: options.minAnswers,
      client,
    }).finally(() => clearInterval(ticker));
    const { record } = traffic;
    const prepared = setup;
    let finals = await settle(target, prepared, record, traffic.sweep, options.settleMs, progress);
    const check = async (again: { settle?: boolean } = {}) => {
      if (again.settle) finals = await settle(target, prepared, record, traffic.sweep, options.settleMs, progress);
      const stored = await readStoredState(dataDir);
      try {
        return await checkInvariants({ record, setup: prepared, stored, finals, faults: tally.faults });
      } finally {
        stored.close();
      }
    };
    const violations = await check();
    const report = chaosReport(
      options.seed,
      (Date.now() - startedAt) / 1000,
      record,
      prepared,
      finals,
      twin.faultCounts(),
      tally.faults,
      violations,
    );
    return {
      report,
      violations,
      recheck: check,
      record,
      setup: prepared,
      twin,
      faults,
      dataDir,
      async close(keepData = false) {
        tally.stop();
        await Promise.all([prepared.recordings.close(), prepared.callbacks.close()]);
        await twin.close();
        if (!keepData) rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    tally.stop();
    await Promise.all([setup?.recordings.close(), setup?.callbacks.close()]);
    await twin.close();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}

/** Attempts of the nightly trigger: the schedule's first, and its two retries (lib/cdk: at most 2 retries). */
const NIGHTLY_ATTEMPTS = 3;
const SWEEP_POLL_MS = 250;

/**
 * The nightly trigger, as the schedule fires it, retried as the schedule retries a failed one (its Step Functions starts
 * are throttled as any function's are), then the wait for every sweep it started to end.
 */
async function nightly(twin: LocalTwin, taskIds: string[]): Promise<void> {
  const sweepId = nightlySweepId(Date.now());
  for (let attempt = 0; attempt < NIGHTLY_ATTEMPTS; attempt++) {
    try {
      await twin.runNightly();
      break;
    } catch {
      // The schedule retries a failed invocation; a start already made is the same execution the next time.
    }
  }
  const names = taskIds.map((taskId) => executionArnOf(twin.twin.collection_state_machine_arn, `collect-${taskId}-${sweepId}`));
  for (const arn of names) {
    for (;;) {
      let status: string;
      try {
        status = twin.stepFunctions.describeExecution(arn).status;
      } catch {
        break; // never started: every attempt of the trigger failed before it
      }
      if (status !== 'RUNNING') break;
      await new Promise((resolve) => setTimeout(resolve, SWEEP_POLL_MS));
    }
  }
}

function chaosReport(
  seed: number,
  seconds: number,
  record: TrafficRecord,
  setup: TrafficSetup,
  finals: FinalStatuses,
  faults: Record<string, number>,
  injected: readonly FaultRecord[],
  violations: Violation[],
): ChaosReport {
  const count = (into: Record<string, number>, key: string) => (into[key] = (into[key] ?? 0) + 1);
  const statuses: Record<string, number> = {};
  const refusals: Record<string, number> = {};
  for (const answer of record.ledger.answers) {
    count(statuses, String(answer.status));
    if (answer.status >= 400) count(refusals, `${answer.label} ${answer.status}`);
  }
  const finalStatuses: Record<string, number> = {};
  const callbacks: Record<string, number> = {};
  for (const run of record.runs.values()) {
    count(finalStatuses, `${run.workflow} ${finals.get(run.executionId)?.status ?? 'unknown'}`);
    if (!run.callback) continue;
    const deliveries = setup.callbacks.deliveries(run.callback.tag);
    count(callbacks, `${run.callback.behaviour} ${deliveries.some((one) => one.outcome === 'accepted') ? 'taken' : 'not taken'}`);
    callbacks[`${run.callback.behaviour} attempts`] = (callbacks[`${run.callback.behaviour} attempts`] ?? 0) + deliveries.length;
  }
  const byInvariant: Record<string, number> = {};
  for (const violation of violations) count(byInvariant, violation.invariant);
  return {
    seed,
    seconds: Math.round(seconds),
    requests: record.ledger.answers.length + record.ledger.dropped,
    retries: record.ledger.retries,
    dropped: record.ledger.dropped,
    kinds: record.kinds,
    statuses,
    refusals,
    faults,
    acknowledged_events: record.events.size,
    duplicates: record.duplicates.length,
    runs: finals.size,
    final_statuses: finalStatuses,
    failure_bound: failureBound(injected),
    callbacks,
    streams: record.streams.length,
    stream_resumes: record.streams.reduce((sum, stream) => sum + stream.resumes, 0),
    subscriptions: record.subscriptions.length,
    collections: record.collections,
    nightly_sweeps: record.sweeps.filter((sweep) => sweep.how === 'nightly').length,
    nightly_throttles: injected.filter((fault) => fault.functionName === 'CollectionNightly' && fault.kind === 'sfn:throttle').length,
    tool_calls: setup.callbacks.toolCalls(),
    unanswered: record.ledger.unanswered.length,
    violations: violations.length,
    by_invariant: byInvariant,
  };
}

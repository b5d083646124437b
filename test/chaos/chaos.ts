import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseTwinFaults } from '#lib/twin/faults.ts';
import { startLocalTwin, type LocalTwin } from '#lib/twin/twin.ts';
import { retryingClient } from './client.ts';
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
  /** How long the runs, sweeps and callbacks get to finish after the traffic. */
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
  /** Checks the invariants again (the suite's own test breaks the stored state on purpose, then asks). */
  recheck(): Promise<Violation[]>;
  record: TrafficRecord;
  twin: LocalTwin;
  dataDir: string;
  close(keepData?: boolean): Promise<void>;
}

export interface ChaosReport {
  seed: number;
  seconds: number;
  requests: number;
  retries: number;
  dropped: number;
  statuses: Record<string, number>;
  /** Refusals by request and status (`execute echo 503`), to see where the faults surfaced. */
  refusals: Record<string, number>;
  faults: Record<string, number>;
  acknowledged_events: number;
  duplicates: number;
  runs: number;
  streams: number;
  stream_resumes: number;
  collections: number;
  /** Requests the API never answered within REQUEST_TIMEOUT_MS (each also a violation). */
  unanswered: number;
  violations: number;
  by_invariant: Record<string, number>;
}

/** Starts a twin with the faults, drives the mix, lets it settle, and checks every invariant. */
export async function runChaos(options: ChaosOptions): Promise<ChaosRun> {
  // The mix's callback receiver and recording host are on loopback, which only these test settings allow.
  process.env.ALLOW_LOOPBACK_CALLBACKS = '1';
  process.env.ALLOW_LOOPBACK_RECORDINGS = '1';
  const dataDir = mkdtempSync(join(tmpdir(), 'chaos-'));
  const faults = parseTwinFaults(options.faults, String(options.seed));
  const twin = await startLocalTwin({ dataDir, host: '127.0.0.1', port: 0, faults, retryIntervalMs: options.retryIntervalMs });
  const target: TrafficTarget = {
    url: twin.url,
    dataDir,
    collect: collectThroughCli,
  };
  let setup: TrafficSetup | undefined;
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
    const record = await runTraffic(target, {
      durationMs: options.durationMs,
      seed: options.seed,
      concurrency: options.concurrency,
      collectEveryMs: options.collectEveryMs,
      minAnswers: options.minAnswers,
      client,
    }).finally(() => clearInterval(ticker));
    const finals = await settle(target, setup, record, options.settleMs, progress);
    const check = async () => {
      const stored = await readStoredState(dataDir);
      try {
        return await checkInvariants({ record, setup: setup!, stored, finals });
      } finally {
        stored.close();
      }
    };
    const violations = await check();
    const report = chaosReport(options.seed, (Date.now() - startedAt) / 1000, record, finals, twin.faultCounts(), violations);
    const finished = setup;
    return {
      report,
      violations,
      recheck: check,
      record,
      twin,
      dataDir,
      async close(keepData = false) {
        await Promise.all([finished.recordings.close(), finished.callbacks.close()]);
        await twin.close();
        if (!keepData) rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await Promise.all([setup?.recordings.close(), setup?.callbacks.close()]);
    await twin.close();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}

function chaosReport(
  seed: number,
  seconds: number,
  record: TrafficRecord,
  finals: FinalStatuses,
  faults: Record<string, number>,
  violations: Violation[],
): ChaosReport {
  const statuses: Record<string, number> = {};
  const refusals: Record<string, number> = {};
  for (const answer of record.ledger.answers) {
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    if (answer.status >= 400) refusals[`${answer.label} ${answer.status}`] = (refusals[`${answer.label} ${answer.status}`] ?? 0) + 1;
  }
  const byInvariant: Record<string, number> = {};
  for (const violation of violations) byInvariant[violation.invariant] = (byInvariant[violation.invariant] ?? 0) + 1;
  return {
    seed,
    seconds: Math.round(seconds),
    requests: record.ledger.answers.length + record.ledger.dropped,
    retries: record.ledger.retries,
    dropped: record.ledger.dropped,
    statuses,
    refusals,
    faults,
    acknowledged_events: record.events.size,
    duplicates: record.duplicates.length,
    runs: finals.size,
    streams: record.streams.length,
    stream_resumes: record.streams.reduce((sum, stream) => sum + stream.resumes, 0),
    collections: record.collections,
    unanswered: record.ledger.unanswered.length,
    violations: violations.length,
    by_invariant: byInvariant,
  };
}

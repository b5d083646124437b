import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readLiveTwinFile } from '#lib/twin/twin-file.ts';
import { percentile } from '../bench/stats.ts';
import { isAlive, processTreeMemory } from './process-memory.ts';
import { collectThroughCli, prepareTraffic, runTraffic, type RequestSample, type TrafficSetup, type TrafficTarget } from './traffic.ts';

/**
 * `npm run soak -- --minutes N`: the twin as `npm start` runs it (a child process, a fresh DATA_DIR, free ports, no
 * request lines), under mixed traffic without faults for N minutes, spread over several keys and links so that no rate
 * limit paces it (each key and each link may make 600 requests a minute). Every 10 s, on the same ticks of every
 * minute, it samples the resident memory (VmRSS) of the twin's process and of each process below it (the embedded
 * DynamoDB), and the latency, 429 and 5xx answers of the requests that ended in that window. It prints a row per window
 * and one JSON line, and fails (exit 1) when memory at the start of the last minute is more than 10 % above memory at
 * the start of the first minute after warm-up (the same point of the minute, so a busy moment is never compared
 * with an idle one), when any answer was a 5xx, or when any was a 429 (the soak throttled itself).
 */
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    minutes: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '8' },
    seed: { type: 'string', default: '1' },
    keys: { type: 'string', default: '8' },
    links: { type: 'string', default: '4' },
  },
});
const minutes = Number(values.minutes);
const concurrency = Number(values.concurrency);
const seed = Number(values.seed);
const keys = Number(values.keys);
const linksPerKind = Number(values.links);
if (
  !(minutes > 0) ||
  !Number.isInteger(concurrency) ||
  concurrency < 1 ||
  !Number.isInteger(seed) ||
  !Number.isInteger(keys) ||
  keys < 1 ||
  !Number.isInteger(linksPerKind) ||
  linksPerKind < 1
) {
  console.error('usage: npm run soak -- --minutes N [--concurrency C] [--seed S] [--keys K] [--links L]');
  process.exit(2);
}

const SAMPLE_MS = 10_000;
const MINUTE_MS = 60_000;
/** Memory is compared from the first minute's mark after this much traffic: cold starts, JIT and caches fill the first minute. */
const WARM_UP_MS = 60_000;
const MAX_GROWTH_PCT = 10;
const START_TIMEOUT_MS = 120_000;
/** After its deadline the mix still finishes what it started (a collection sweep, a stream); longer than this is a hang. */
const TRAFFIC_GRACE_MS = 5 * 60_000;
const STOP_TIMEOUT_MS = 60_000;
const OUTPUT_TAIL_CHARS = 16_384;
const MB = 1024 * 1024;
const ROOT = resolve(fileURLToPath(new URL('../../', import.meta.url)));
const DYNAMO_CHILD = 'dynamo-child.cjs';

interface Sample {
  /** Which tick of the schedule (every SAMPLE_MS from the traffic's start) it was taken at. */
  index: number;
  elapsedMs: number;
  twinBytes: number;
  dynamoBytes: number;
  totalBytes: number;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  throttled: number;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** The twin, started as `npm start` starts it, and resolved once it wrote its `twin.json`. */
async function startTwin(dataDir: string): Promise<{ child: ChildProcess; url: string; webhookUrl: string; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], {
    cwd: ROOT,
    // The mix's callback receiver, recording host and tool server are on loopback, which only these test settings allow.
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: '0',
      TWIN_LOG: 'off',
      ALLOW_LOOPBACK_CALLBACKS: '1',
      ALLOW_LOOPBACK_RECORDINGS: '1',
      ALLOW_LOOPBACK_TOOLS: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  // Read at once (the functions log to the twin's stdout), kept only to explain a failure.
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`The twin exited while starting:\n${output}`);
    const twin = readLiveTwinFile(dataDir);
    if (twin) return { child, url: twin.api_url, webhookUrl: twin.webhook_url, output: () => output };
    if (Date.now() > deadline) throw new Error(`The twin wrote no twin.json within ${START_TIMEOUT_MS / 1000} s:\n${output}`);
    await sleep(100);
  }
}

/** SIGTERM, as a person's Ctrl-C or a service manager would stop it, and the wait for it and its store to exit. */
async function stopTwin(child: ChildProcess): Promise<void> {
  const below = processTreeMemory(child.pid!).descendants.map((one) => one.pid);
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    const stuck = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(stuck);
  }
  // The embedded DynamoDB closes its LevelDB once the twin is gone; the data directory goes only after that.
  for (const deadline = Date.now() + STOP_TIMEOUT_MS; below.some(isAlive) && Date.now() < deadline; ) await sleep(100);
}

const mb = (bytes: number) => bytes / MB;
/** A sample taken on a whole minute of traffic: the same point of every minute (sweeps run every 20 s from the start). */
const isMinuteMark = (sample: Sample) => sample.index > 0 && (sample.index * SAMPLE_MS) % MINUTE_MS === 0;
const round1 = (value: number) => Math.round(value * 10) / 10;

function printTable(samples: readonly Sample[]): void {
  const columns = ['elapsed', 'twin MB', 'dynamodb MB', 'total MB', 'requests', 'p50 ms', 'p99 ms', '429', '5xx'];
  const rows = samples.map((sample) => [
    // The minute marks, whose memory the summary compares, are starred.
    `${Math.round(sample.elapsedMs / 1000)} s${isMinuteMark(sample) ? '*' : ''}`,
    mb(sample.twinBytes).toFixed(1),
    mb(sample.dynamoBytes).toFixed(1),
    mb(sample.totalBytes).toFixed(1),
    String(sample.requests),
    sample.p50Ms.toFixed(1),
    sample.p99Ms.toFixed(1),
    String(sample.throttled),
    String(sample.errors),
  ]);
  const widths = columns.map((column, i) => Math.max(column.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((cell, i) => cell.padStart(widths[i]!)).join('  ');
  console.log(line(columns));
  for (const row of rows) console.log(line(row));
}

const dataDir = mkdtempSync(join(tmpdir(), 'soak-'));
let twin: Awaited<ReturnType<typeof startTwin>> | undefined;
let setup: TrafficSetup | undefined;
let cleaningUp: Promise<void> | undefined;
const cleanUp = () =>
  (cleaningUp ??= (async () => {
    await Promise.all([setup?.recordings.close(), setup?.callbacks.close()]);
    if (twin) await stopTwin(twin.child);
    rmSync(dataDir, { recursive: true, force: true });
  })());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanUp().then(() => process.exit(130)));
}

let exitCode = 1;
try {
  twin = await startTwin(dataDir);
  const twinPid = twin.child.pid!;
  // The admin CLI finds the twin's stores through DATA_DIR's twin.json, and checks the tooled agent's loopback tool as
  // the twin does when it publishes.
  process.env.DATA_DIR = dataDir;
  process.env.ALLOW_LOOPBACK_TOOLS = '1';
  const target: TrafficTarget = { url: twin.url, webhookUrl: twin.webhookUrl, dataDir, collect: collectThroughCli };
  console.log(
    `soak: twin pid ${twinPid} at ${twin.url}, DATA_DIR ${dataDir}; ${minutes} min of mixed traffic at concurrency ${concurrency}, seed ${seed}`,
  );
  setup = await prepareTraffic(target, { keys, linksPerKind });

  const samples: Sample[] = [];
  let window: RequestSample[] = [];
  const all: number[] = [];
  let errors = 0;
  let throttled = 0;
  let twinDied = false;
  const startedAt = performance.now();
  const sample = (index: number) => {
    const { root, descendants } = processTreeMemory(twinPid);
    if (!root || !isAlive(twinPid)) twinDied = true;
    const dynamoBytes = descendants.filter((one) => one.command.includes(DYNAMO_CHILD)).reduce((sum, one) => sum + one.rssBytes, 0);
    const twinBytes = root?.rssBytes ?? 0;
    const taken = window;
    window = [];
    const latencies = taken.map((one) => one.ms).sort((a, b) => a - b);
    samples.push({
      index,
      elapsedMs: performance.now() - startedAt,
      twinBytes,
      dynamoBytes,
      totalBytes: twinBytes + descendants.reduce((sum, one) => sum + one.rssBytes, 0),
      requests: taken.length,
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      errors: taken.filter((one) => one.status >= 500).length,
      throttled: taken.filter((one) => one.status === 429).length,
    });
  };
  // Each tick is scheduled from the start, not from the last tick, so the minute marks stay on the minute.
  let tick = 0;
  let sampler: NodeJS.Timeout | undefined;
  const schedule = () => {
    tick += 1;
    sampler = setTimeout(
      () => {
        sample(tick);
        schedule();
      },
      Math.max(0, startedAt + tick * SAMPLE_MS - performance.now()),
    );
  };
  schedule();
  let late: NodeJS.Timeout | undefined;
  let result: Awaited<ReturnType<typeof runTraffic>> | undefined;
  try {
    const traffic = runTraffic(target, {
      durationMs: minutes * MINUTE_MS,
      seed,
      concurrency,
      onRequest(one) {
        window.push(one);
        all.push(one.ms);
        if (one.status >= 500) errors += 1;
        if (one.status === 429) throttled += 1;
      },
    });
    const hung = new Promise<undefined>((resolveLate) => {
      late = setTimeout(() => resolveLate(undefined), minutes * MINUTE_MS + TRAFFIC_GRACE_MS);
    });
    result = await Promise.race([traffic, hung]);
  } finally {
    clearTimeout(sampler);
    clearTimeout(late);
  }
  // The last, partial window (traffic rarely ends on a sample's tick); never a minute mark.
  if (window.length > 0) sample(-1);

  printTable(samples);
  // Memory at the same point of each minute: the mark of the first whole minute after warm-up, and the last mark taken
  // while the mix ran (when it hangs, the last one within its minutes).
  const marks = samples.filter((one) => isMinuteMark(one) && one.elapsedMs <= minutes * MINUTE_MS + SAMPLE_MS);
  const warm = marks.find((one) => one.elapsedMs >= WARM_UP_MS) ?? samples[0]!;
  const last = marks.at(-1) ?? samples.at(-1)!;
  const growthPct = ((last.totalBytes - warm.totalBytes) / warm.totalBytes) * 100;
  all.sort((a, b) => a - b);
  const summary = {
    minutes,
    keys,
    links_per_kind: linksPerKind,
    warmup_at_s: Math.round(warm.elapsedMs / 1000),
    final_at_s: Math.round(last.elapsedMs / 1000),
    warmup_mb: round1(mb(warm.totalBytes)),
    final_mb: round1(mb(last.totalBytes)),
    growth_pct: round1(growthPct),
    minute_marks_mb: marks.map((one) => round1(mb(one.totalBytes))),
    max_mb: round1(mb(Math.max(...samples.map((one) => one.totalBytes)))),
    twin_warmup_mb: round1(mb(warm.twinBytes)),
    twin_final_mb: round1(mb(last.twinBytes)),
    dynamodb_warmup_mb: round1(mb(warm.dynamoBytes)),
    dynamodb_final_mb: round1(mb(last.dynamoBytes)),
    p50_ms: round1(percentile(all, 0.5)),
    p99_ms: round1(percentile(all, 0.99)),
    requests: result?.record.requests ?? all.length,
    requests_per_minute: round1((result?.record.requests ?? all.length) / minutes),
    kinds: result?.record.kinds ?? null,
    throttled_429: throttled,
    errors_5xx: errors,
    dropped_connections: result?.record.ledger.dropped ?? null,
  };
  console.log(JSON.stringify(summary));
  const failures = [
    ...(growthPct > MAX_GROWTH_PCT ? [`memory grew ${growthPct.toFixed(1)} % after warm-up (at most ${MAX_GROWTH_PCT} %)`] : []),
    ...(errors > 0 ? [`${errors} answers were 5xx`] : []),
    ...(throttled > 0 ? [`${throttled} answers were 429: the soak's traffic met a rate limit (more --keys or --links)`] : []),
    ...(twinDied ? ['the twin exited during the soak'] : []),
    ...(result ? [] : [`the traffic had not finished ${TRAFFIC_GRACE_MS / 60_000} minutes after its end`]),
  ];
  if (failures.length > 0) {
    console.error(`soak failed: ${failures.join('; ')}`);
    console.error(`the twin's last output:\n${twin.output()}`);
  } else {
    exitCode = 0;
  }
} catch (error) {
  console.error('soak failed:', error);
  if (twin) console.error(`the twin's last output:\n${twin.output()}`);
} finally {
  await cleanUp();
}
process.exit(exitCode);

import { parseArgs } from 'node:util';
import { EXAMPLE_FAULTS, runChaos } from './chaos.ts';

/**
 * `npm run chaos [-- --minutes N --concurrency C]`: mixed traffic under injected faults (TWIN_FAULTS, default every
 * kind at once; TWIN_FAULTS_SEED replays a chaos session), then the invariants. Prints each violation, then one JSON line of
 * counts; exits 1 when any invariant broke. Settling may take 11 minutes after the last execution: a callback whose
 * receiver never takes it is given up only at the end of DeliverCallback's retries (10, 20, ... 320 s).
 */
const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '8' },
    'settle-minutes': { type: 'string', default: '13' },
  },
});
const minutes = Number(values.minutes);
const concurrency = Number(values.concurrency);
const settleMinutes = Number(values['settle-minutes']);
if (!(minutes > 0) || !Number.isInteger(concurrency) || concurrency < 1 || !(settleMinutes > 0)) {
  console.error('usage: npm run chaos -- [--minutes N] [--concurrency C] [--settle-minutes M]');
  process.exit(2);
}
const seed = process.env.TWIN_FAULTS_SEED ? Number(process.env.TWIN_FAULTS_SEED) : Math.floor(Math.random() * 2 ** 31);
const faults = process.env.TWIN_FAULTS || EXAMPLE_FAULTS;
console.error(`chaos: ${minutes} min of traffic at concurrency ${concurrency} under ${faults} (TWIN_FAULTS_SEED=${seed} replays it)`);

let lastProgress = '';
const progress = (line: string) => {
  // Settling repeats its line every poll: only a change is shown.
  if (line !== lastProgress) console.error(`${new Date().toISOString().slice(11, 19)} ${line}`);
  lastProgress = line;
};
const chaos = await runChaos({ faults, seed, durationMs: minutes * 60_000, concurrency, settleMs: settleMinutes * 60_000, progress });
if (process.env.CHAOS_SHOW_REFUSALS) {
  // One example body per refused request and status, to see what a fault looked like to the caller.
  const shown = new Set<string>();
  for (const answer of chaos.record.ledger.answers) {
    const kind = `${answer.label} ${answer.status}`;
    if (answer.status < 400 || shown.has(kind)) continue;
    shown.add(kind);
    console.error(`refused ${kind}: ${answer.refusalBody.slice(0, 300)}`);
  }
}
for (const violation of chaos.violations) {
  console.error(`VIOLATION ${violation.invariant}: ${violation.detail}`);
  // What the client sent and heard about the ids the violation names: the first thing to read when replaying it.
  const ids = violation.detail.match(/[0-9a-f]{8}-[0-9a-f-]{27}/g) ?? [];
  for (const answer of chaos.record.ledger.answers) {
    if (ids.some((id) => answer.path.includes(id)))
      console.error(`  ${answer.label} ${answer.path} ${answer.status} ${answer.refusalBody.slice(0, 200)}`);
  }
}
// A chaos session with violations keeps its data directory (the twin's stores and Step Functions journal) for a post-mortem.
const keep = chaos.violations.length > 0;
if (keep) console.error(`data kept in ${chaos.dataDir}`);
await chaos.close(keep);
console.log(JSON.stringify(chaos.report));
process.exit(chaos.violations.length === 0 ? 0 : 1);

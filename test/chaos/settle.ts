import { TAKEN_IN_THE_END } from './callback-plan.ts';
import { retryingClient } from './client.ts';
import type { FinalStatuses, FinalView } from './invariants.ts';
import { TERMINAL } from './outcomes.ts';
import { publishedContext } from './published-context.ts';
import { readStoredState } from './stored-state.ts';
import { subscribe } from './stream-traffic.ts';
import type { TrafficTarget } from './traffic.ts';
import type { StartedRun, TrafficRecord, TrafficSetup } from './traffic-record.ts';

const POLL_MS = 500;
/** Stored callback states are read less often: each read scans the executions table. */
const CALLBACK_POLL_MS = 2_000;
const SETTLE_READERS = 8;
/** Sweeps after the traffic: an event a faulted sweep gave back is taken by the next (five failures abandon it). */
const FINAL_SWEEPS = 4;

/**
 * After the traffic: waits (up to `deadlineMs` from now) for every answered execution to end or wait at an approval
 * nobody decided, sweeps the collection until every acknowledged event is handed off, waits for each callback to be
 * taken or given up, and reads the lifecycle of the executions a decision answered 200 on that ended cancelled. Answers
 * each execution's final view as GET /executions reads it; the invariants judge what is left.
 */
export async function settle(
  target: TrafficTarget,
  setup: TrafficSetup,
  record: TrafficRecord,
  sweep: () => Promise<void>,
  deadlineMs: number,
  progress: (line: string) => void = () => undefined,
): Promise<FinalStatuses> {
  const client = retryingClient();
  const endAt = Date.now() + deadlineMs;
  const finals: FinalStatuses = new Map();
  // The reads go round the keys, as the mix's requests do: one key alone would meet its rate limit.
  let reads = 0;
  const auth = () => ({ authorization: `Bearer ${setup.keys[reads++ % setup.keys.length]!}` });
  const open = () =>
    [...record.runs.values()].filter((run) => {
      const final = finals.get(run.executionId);
      if (!final) return true;
      const undecided = !run.decisions.some((decision) => decision.status === 200);
      return !TERMINAL.has(final.status) && !(final.status === 'interrupted' && undecided);
    });
  const readFinals = async (runs: StartedRun[]) => {
    // A few reads at a time, as a caller polling its executions would.
    const queue = [...runs];
    const poller = async () => {
      for (let run = queue.shift(); run; run = queue.shift()) {
        const answer = await client.send('settle: get execution', `${target.url}/api/v1/published/executions/${run.executionId}`, {
          headers: auth(),
        });
        if (answer?.status === 200) finals.set(run.executionId, JSON.parse(answer.text) as FinalView);
      }
    };
    await Promise.all(Array.from({ length: SETTLE_READERS }, poller));
  };
  for (let pending = open(); pending.length > 0 && Date.now() < endAt; pending = open()) {
    progress(`settling: ${pending.length} of ${record.runs.size} executions not seen ended yet`);
    await readFinals(pending);
    if (open().length > 0) await client.sleep(POLL_MS);
  }

  // At least one sweep whatever the time: the events acknowledged last are handed off only after the traffic.
  for (let round = 0; round < FINAL_SWEEPS && (round === 0 || Date.now() < endAt); round++) {
    progress(`settling: collection sweep ${round + 1}`);
    await sweep();
    const stored = await readStoredState(target.dataDir);
    const waiting = [...record.events.values()].some((event) =>
      stored.events.get(event.externalId)?.some((item) => item.source_id === event.sourceId && item.state !== 'handed_off'),
    );
    stored.close();
    if (!waiting) break;
  }

  const owed = () => owedCallbacks(target.dataDir, setup, record, finals);
  for (let left = await owed(); left.length > 0 && Date.now() < endAt; left = await owed()) {
    progress(`settling: ${left.length} callbacks neither taken nor given up yet`);
    await client.sleep(CALLBACK_POLL_MS);
  }
  // Read once more: the invariants compare each callback's body with the execution as it stands at the end.
  await readFinals([...record.runs.values()].filter((run) => run.callback));

  const context = publishedContext(target.url, setup, client, record);
  const firstKey = () => 0;
  for (const run of record.runs.values()) {
    const decided = run.decisions.some((decision) => decision.status === 200);
    if (decided && finals.get(run.executionId)?.status === 'cancelled') {
      // Read for this check alone: it is no subscription of the mix's.
      const lifecycle = await subscribe(context, run.executionId, firstKey, { after: 1 });
      record.subscriptions.pop();
      run.lifecycle = lifecycle.events;
    }
  }
  record.ledger.answers.push(...client.ledger.answers);
  record.ledger.unanswered.push(...client.ledger.unanswered);
  record.ledger.retries += client.ledger.retries;
  record.ledger.dropped += client.ledger.dropped;
  return finals;
}

/** Finished executions whose callback is neither taken (its receiver takes it in the end) nor recorded given up. */
async function owedCallbacks(dataDir: string, setup: TrafficSetup, record: TrafficRecord, finals: FinalStatuses): Promise<StartedRun[]> {
  const finished = [...record.runs.values()].filter((run) => run.callback && TERMINAL.has(finals.get(run.executionId)?.status ?? ''));
  const givingUp = finished.some((run) => !TAKEN_IN_THE_END.has(run.callback!.behaviour));
  const stored = givingUp ? await readStoredState(dataDir) : undefined;
  stored?.close();
  return finished.filter((run) => {
    if (TAKEN_IN_THE_END.has(run.callback!.behaviour))
      return !setup.callbacks.deliveries(run.callback!.tag).some((delivery) => delivery.outcome === 'accepted');
    const state = (stored?.executions.get(`chaos-${run.idempotencyKey}`) ?? []).find(
      (one) => one.execution_id === run.executionId,
    )?.callback_state;
    return state !== 'abandoned' && state !== 'delivered';
  });
}

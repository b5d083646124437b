import { retryingClient } from './client.ts';
import type { FinalStatuses } from './invariants.ts';
import { readStoredState } from './stored-state.ts';
import { collectAll, type TrafficRecord, type TrafficSetup, type TrafficTarget } from './traffic.ts';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const POLL_MS = 500;
const SETTLE_READERS = 8;
/** Sweeps after the traffic: an event a faulted sweep gave back is taken by the next (five failures abandon it). */
const FINAL_SWEEPS = 4;

/**
 * After the traffic: waits (up to `deadlineMs` from now) for every answered run to end or wait at an approval nobody
 * decided, sweeps the collection until every acknowledged event is handed off, and waits for the callbacks of the
 * finished runs. Answers each execution's final status as GET /executions reads it; the invariants judge what is left.
 */
export async function settle(
  target: TrafficTarget,
  setup: TrafficSetup,
  record: TrafficRecord,
  deadlineMs: number,
  progress: (line: string) => void = () => undefined,
): Promise<FinalStatuses> {
  const client = retryingClient();
  const endAt = Date.now() + deadlineMs;
  const finals: FinalStatuses = new Map();
  const open = () =>
    [...record.runs.values()].filter((run) => {
      const final = finals.get(run.executionId);
      if (!final) return true;
      return !TERMINAL.has(final.status) && !(final.status === 'interrupted' && run.decision === undefined);
    });
  for (let pending = open(); pending.length > 0 && Date.now() < endAt; pending = open()) {
    progress(`settling: ${pending.length} of ${record.runs.size} runs not seen ended yet`);
    // A few reads at a time, as a caller polling its runs would.
    const queue = [...pending];
    const poller = async () => {
      for (let run = queue.shift(); run; run = queue.shift()) {
        const answer = await client.send('settle: get execution', `${target.url}/api/v1/published/executions/${run.executionId}`, {
          headers: { authorization: `Bearer ${setup.key}` },
        });
        if (answer?.status === 200) finals.set(run.executionId, JSON.parse(answer.text) as { status: string });
      }
    };
    await Promise.all(Array.from({ length: SETTLE_READERS }, poller));
    if (open().length > 0) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  record.ledger.answers.push(...client.ledger.answers);
  record.ledger.retries += client.ledger.retries;
  record.ledger.dropped += client.ledger.dropped;

  // At least one sweep whatever the time: the events acknowledged last are handed off only after the traffic.
  for (let sweep = 0; sweep < FINAL_SWEEPS && (sweep === 0 || Date.now() < endAt); sweep++) {
    progress(`settling: collection sweep ${sweep + 1}`);
    await collectAll(target, setup, record);
    const stored = await readStoredState(target.dataDir);
    const waiting = [...record.events.values()].some((event) =>
      stored.events.get(event.externalId)?.some((item) => item.state !== 'handed_off'),
    );
    stored.close();
    if (!waiting) break;
  }

  const owed = () =>
    [...record.runs.values()].filter(
      (run) =>
        run.callbackTag &&
        TERMINAL.has(finals.get(run.executionId)?.status ?? '') &&
        setup.callbacks.deliveries(run.callbackTag).length === 0,
    );
  while (owed().length > 0 && Date.now() < endAt) {
    progress(`settling: ${owed().length} callbacks not delivered yet`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return finals;
}

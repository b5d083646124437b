import type { RetryingClient } from './client.ts';
import { noteKind, type StartedRun, type StopPurpose, type TrafficRecord, type TrafficSetup, type Workflow } from './traffic-record.ts';

type Random = () => number;

/** What every request of the workflow API's side of the mix needs: where to send, with which key, and where to note it. */
export interface PublishedContext {
  client: RetryingClient;
  record: TrafficRecord;
  setup: TrafficSetup;
  url(path: string): string;
  /** The headers of one of the setup's keys (drawn, so the mix's rate spreads over them all). */
  headers(random: Random, extra?: Record<string, string>): Record<string, string>;
  /** The run of an execution id, made on first sight. */
  runOf(executionId: string, workflow: Workflow, idempotencyKey: string): StartedRun;
  /** Sends a stop and notes why and how it was answered. */
  stop(run: StartedRun, purpose: StopPurpose, random: Random): Promise<number | undefined>;
}

export function publishedContext(baseUrl: string, setup: TrafficSetup, client: RetryingClient, record: TrafficRecord): PublishedContext {
  const url = (path: string) => `${baseUrl}/api/v1/published${path}`;
  const headers = (random: Random, extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${setup.keys[Math.floor(random() * setup.keys.length)]!}`,
    'content-type': 'application/json',
    ...extra,
  });
  const runOf = (executionId: string, workflow: Workflow, idempotencyKey: string) => {
    let run = record.runs.get(executionId);
    if (!run) {
      run = { executionId, workflow, idempotencyKey, decisions: [], stops: [] };
      record.runs.set(executionId, run);
    }
    return run;
  };
  return {
    client,
    record,
    setup,
    url,
    headers,
    runOf,
    async stop(run, purpose, random) {
      noteKind(record, `stop ${purpose}`);
      const answer = await client.send(`stop ${purpose}`, url(`/executions/${run.executionId}/stop`), {
        method: 'POST',
        headers: headers(random),
      });
      // A 409 after a lost answer may be the first attempt's stop having applied: not known, as a lost answer is.
      const status = answer && !(answer.status === 409 && answer.attempts > 1) ? answer.status : undefined;
      run.stops.push({ purpose, status });
      return status;
    },
  };
}

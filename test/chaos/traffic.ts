import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { runCli } from '#lib/admin/cli.ts';
import { retryingClient, type Answer, type RetryingClient } from './client.ts';
import { startCallbackReceiver, type CallbackReceiver } from './callback-receiver.ts';
import { seededRandom } from '#lib/twin/faults.ts';
import { readEventStream, type StreamedEvent } from './sse-reader.ts';

type Random = () => number;

/**
 * Mixed traffic on both APIs, as their callers send it: call events (with a recording the collection downloads),
 * dialogs small and large, duplicates, blocking runs with and without a callback, the same Idempotency-Key sent
 * twice, streamed runs resumed after a cut, approvals decided (sometimes twice), Bedrock agent runs, and collection
 * sweeps. What each request was answered with goes into the ledger the invariants read (invariants.ts).
 */

export interface TrafficTarget {
  url: string;
  dataDir: string;
  /** Runs a collection sweep of the task now (the nightly trigger, or the admin CLI's `collect`). */
  collect(taskId: string): Promise<unknown>;
}

export interface RequestSample {
  label: string;
  status: number;
  ms: number;
}

export interface TrafficOptions {
  durationMs: number;
  seed: number;
  concurrency: number;
  /** Time between collection sweeps while traffic runs (each task once per sweep). */
  collectEveryMs?: number;
  onRequest?(sample: RequestSample): void;
  /** The client to send with (its ledger becomes the record's); one reporting to `onRequest` by default. */
  client?: RetryingClient;
  /** Goes on past `durationMs` until this many answers came: a short run does the same work on a slow machine. */
  minAnswers?: number;
}

export interface TrafficSetup {
  key: string;
  calls: { linkId: string; token: string; taskId: string };
  dialogs: { linkId: string; token: string; taskId: string };
  recordings: { url: string; close(): Promise<void> };
  callbacks: CallbackReceiver;
}

export interface AcknowledgedEvent {
  kind: 'calls' | 'dialogs';
  externalId: string;
  eventId: string;
  /** The body as sent, kept for small events only (the ones sent again as duplicates). */
  body?: string;
}

export interface StartedRun {
  executionId: string;
  workflow: 'echo' | 'gate' | 'agent';
  idempotencyKey: string;
  callbackTag?: string;
  /** The decision the first answered approve/reject asked for. */
  decision?: 'approve' | 'reject';
  /** The status the execute answered with. */
  answeredStatus?: string;
}

export interface StreamRecord {
  executionId: string;
  ids: number[];
  completed: boolean;
  resumes: number;
}

export interface TrafficRecord {
  ledger: RetryingClient['ledger'];
  events: Map<string, AcknowledgedEvent>;
  /** Acknowledged duplicates: the event id a duplicate was answered with, beside the one its first send got. */
  duplicates: { externalId: string; answered: string; first: string }[];
  runs: Map<string, StartedRun>;
  /** Idempotency-Key → every execution id an answer named for it. */
  keyAnswers: Map<string, Set<string>>;
  streams: StreamRecord[];
  /** Approvals whose second decision was answered 2xx (a decision must apply once). */
  doubleDecisions: string[];
  collections: number;
  requests: number;
}

const WORKFLOWS_DIR = fileURLToPath(new URL('./workflows/', import.meta.url));
const prepared = new Map<string, Promise<TrafficSetup>>();

async function admin(...argv: string[]): Promise<Record<string, string>> {
  const result = await runCli([...argv, '--json']);
  const output = JSON.parse(result.stdout) as Record<string, string>;
  if (result.exitCode !== 0) throw new Error(`admin ${argv.join(' ')} failed: ${output.error}`);
  return output;
}

/** A sweep of the task now, through the admin CLI on the twin of DATA_DIR (set by prepareTraffic), waiting for its end. */
export const collectThroughCli = (taskId: string) => admin('collect', '--task', taskId);

/**
 * Publishes the chaos workflows, creates a key, and issues, binds and gives a collection task to one link of each
 * type, through the admin CLI on the target's DATA_DIR (set here). Once per data directory.
 */
export function prepareTraffic(target: TrafficTarget): Promise<TrafficSetup> {
  let setup = prepared.get(target.dataDir);
  if (!setup) {
    setup = prepare(target);
    prepared.set(target.dataDir, setup);
  }
  return setup;
}

async function prepare(target: TrafficTarget): Promise<TrafficSetup> {
  process.env.DATA_DIR = target.dataDir;
  await admin('publish', WORKFLOWS_DIR);
  const { key } = await admin('keys', 'create', '--name', 'chaos', '--preset', 'full');
  const link = async (type: 'calls' | 'dialogs') => {
    const issued = await admin('links', 'issue', '--type', type);
    await admin('links', 'bind', issued.link_id!);
    const task = await admin('tasks', 'create', '--link', issued.link_id!);
    return { linkId: issued.link_id!, token: issued.token!, taskId: task.task_id! };
  };
  const { startRecordingServer } = await import('../support/https-recording-server.ts');
  const recordings = await startRecordingServer();
  recordings.route('/rec/', (_request, response) => response.writeHead(200, { 'content-type': 'audio/mpeg' }).end(Buffer.alloc(4_096, 7)));
  return { key: key!, calls: await link('calls'), dialogs: await link('dialogs'), recordings, callbacks: await startCallbackReceiver() };
}

export function newTrafficRecord(client: RetryingClient): TrafficRecord {
  return {
    ledger: client.ledger,
    events: new Map(),
    duplicates: [],
    runs: new Map(),
    keyAnswers: new Map(),
    streams: [],
    doubleDecisions: [],
    collections: 0,
    requests: 0,
  };
}

/** Runs the mix on `concurrency` workers for `durationMs`, then answers what was sent and how it was answered. */
export async function runTraffic(target: TrafficTarget, options: TrafficOptions): Promise<TrafficRecord> {
  const setup = await prepareTraffic(target);
  const client =
    options.client ??
    retryingClient((answer: Answer) => options.onRequest?.({ label: answer.label, status: answer.status, ms: answer.ms }));
  const record = newTrafficRecord(client);
  const actions = trafficActions(target, setup, client, record);
  const endAt = Date.now() + options.durationMs;
  const worker = async (index: number) => {
    const random = seededRandom(options.seed * 1_000 + index);
    while (Date.now() < endAt || client.ledger.answers.length < (options.minAnswers ?? 0)) await actions.pick(random)();
  };
  const collector = async () => {
    const every = options.collectEveryMs ?? 20_000;
    while (Date.now() + every < endAt) {
      await new Promise((resolve) => setTimeout(resolve, every));
      await collectAll(target, setup, record);
    }
  };
  await Promise.all([...Array.from({ length: options.concurrency }, (_, index) => worker(index)), collector()]);
  record.requests = client.ledger.answers.length + client.ledger.dropped;
  return record;
}

/** A sweep still going after this long is left to finish on its own; the next sweep of its task waits for it. */
const COLLECT_WAIT_MS = 120_000;

export async function collectAll(target: TrafficTarget, setup: TrafficSetup, record: TrafficRecord): Promise<void> {
  for (const taskId of [setup.calls.taskId, setup.dialogs.taskId]) {
    // A sweep that fails (its state machine's retries spent) leaves its events to the next one.
    let timer: NodeJS.Timeout | undefined;
    const givenUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, COLLECT_WAIT_MS)));
    await Promise.race([target.collect(taskId).catch(() => undefined), givenUp]);
    clearTimeout(timer);
    record.collections += 1;
  }
}

type Action = () => Promise<void>;

function trafficActions(target: TrafficTarget, setup: TrafficSetup, client: RetryingClient, record: TrafficRecord) {
  const webhook = (token: string) => `${target.url}/api/v1/webhooks/${token}/events`;
  const published = (path: string) => `${target.url}/api/v1/published${path}`;
  const auth = { authorization: `Bearer ${setup.key}`, 'content-type': 'application/json' };

  async function sendEvent(kind: 'calls' | 'dialogs', event: Record<string, unknown>, keepBody: boolean): Promise<void> {
    const body = JSON.stringify(event);
    const token = kind === 'calls' ? setup.calls.token : setup.dialogs.token;
    const answer = await client.send(`${kind} event`, webhook(token), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    if (!answer || (answer.status !== 201 && answer.status !== 200)) return;
    const { event_id: eventId } = JSON.parse(answer.text) as { event_id: string };
    const externalId = String(event.external_id);
    const first = record.events.get(externalId);
    if (first) record.duplicates.push({ externalId, answered: String(eventId), first: first.eventId });
    else record.events.set(externalId, { kind, externalId, eventId: String(eventId), body: keepBody ? body : undefined });
  }

  const callEvent = (): Action => () =>
    sendEvent(
      'calls',
      {
        type: 'call',
        external_id: `call-${randomUUID()}`,
        occurred_at: new Date().toISOString(),
        source_channel: 'website',
        status: 'completed',
        metadata: { direction: 'inbound' },
        audio: { url: setup.recordings.url + `/rec/${randomUUID()}.mp3`, format: 'mp3', duration_seconds: 12 },
      },
      true,
    );

  const dialogEvent =
    (messages: number, textLength: number): Action =>
    () =>
      sendEvent(
        'dialogs',
        {
          type: 'text',
          external_id: `chat-${randomUUID()}`,
          occurred_at: new Date().toISOString(),
          source_channel: 'telegram',
          messages: Array.from({ length: messages }, (_, i) => ({
            // A large dialog's text is random, so that its gzip passes the inline limit and its body goes to S3.
            text: messages < 10 ? `message ${i} `.padEnd(textLength, 'x') : randomBytes(textLength / 2).toString('hex'),
            timestamp: new Date(Date.now() - 60_000 + i).toISOString(),
            author_name: i % 2 ? 'Operator Ann' : 'Client Bob',
            author_role: i % 2 ? 'operator' : 'client',
          })),
        },
        messages < 10,
      );

  const duplicate =
    (random: Random): Action =>
    async () => {
      const small = [...record.events.values()].filter((event) => event.body !== undefined);
      if (small.length === 0) return;
      const event = small[Math.floor(random() * small.length)]!;
      await sendEvent(event.kind, JSON.parse(event.body!) as Record<string, unknown>, false);
    };

  /** Starts an execution blocking, with its own Idempotency-Key (sent again on every retry); `twice` sends the same key once more. */
  async function execute(
    workflow: StartedRun['workflow'],
    options: { callback?: boolean; twice?: boolean } = {},
  ): Promise<StartedRun | undefined> {
    const idempotencyKey = randomUUID();
    const callbackTag = options.callback ? idempotencyKey : undefined;
    const body = JSON.stringify({
      user_id: `chaos-${idempotencyKey}`,
      input: { message: 'hello' },
      ...(callbackTag ? { callback_url: setup.callbacks.url(callbackTag) } : {}),
    });
    const init = { method: 'POST', headers: { ...auth, 'idempotency-key': idempotencyKey }, body };
    let run: StartedRun | undefined;
    for (let send = 0; send < (options.twice ? 2 : 1); send++) {
      const answer = await client.send(`execute ${workflow}`, published(`/workflows/${workflow}/execute`), init);
      if (answer?.status !== 200) continue;
      const { execution_id: executionId, status } = JSON.parse(answer.text) as { execution_id: string; status: string };
      noteKey(idempotencyKey, executionId);
      run ??= { executionId, workflow, idempotencyKey, callbackTag, answeredStatus: status };
      record.runs.set(executionId, record.runs.get(executionId) ?? run);
    }
    return run;
  }

  function noteKey(key: string, executionId: string) {
    const seen = record.keyAnswers.get(key) ?? new Set<string>();
    seen.add(executionId);
    record.keyAnswers.set(key, seen);
  }

  /** As a caller does: decides only once the execution waits at its approval (a blocking execute may answer it still going). */
  async function waitingAtApproval(run: StartedRun): Promise<boolean> {
    let status = run.answeredStatus;
    for (let read = 0; status !== 'interrupted' && read < 60; read++) {
      if (status !== undefined && status !== 'queued' && status !== 'running') return false;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const answer = await client.send('get execution', published(`/executions/${run.executionId}`), { headers: auth });
      status = answer?.status === 200 ? (JSON.parse(answer.text) as { status: string }).status : undefined;
    }
    return status === 'interrupted';
  }

  const approval =
    (random: Random): Action =>
    async () => {
      const run = await execute('gate', { callback: random() < 0.5 });
      if (!run || !(await waitingAtApproval(run))) return;
      const decision = random() < 0.5 ? 'approve' : 'reject';
      const url = published(`/executions/${run.executionId}/${decision}`);
      const init = { method: 'POST', headers: auth, body: JSON.stringify({ feedback: decision }) };
      const answer = await client.send(`${decision}`, url, init);
      // A 409 after a retry is the first attempt's decision having applied; the execution's final state says which.
      if (answer?.status === 200 || answer?.status === 409) run.decision = decision;
      if (random() < 0.3) {
        const other = decision === 'approve' ? 'reject' : 'approve';
        const again = await client.send(`second ${other}`, published(`/executions/${run.executionId}/${other}`), {
          method: 'POST',
          headers: auth,
          body: '{}',
        });
        if (again && again.status < 300) record.doubleDecisions.push(run.executionId);
      }
    };

  const stream =
    (workflow: 'echo' | 'agent', random: Random): Action =>
    async () => {
      const idempotencyKey = randomUUID();
      const body = JSON.stringify({ user_id: `chaos-${idempotencyKey}`, input: { message: 'stream me' } });
      const headers = { ...auth, accept: 'text/event-stream', 'idempotency-key': idempotencyKey };
      const seen: StreamRecord = { executionId: '', ids: [], completed: false, resumes: 0 };
      const dropFirst = random() < 0.5;
      for (let attempt = 0; attempt < 10 && !seen.completed; attempt++) {
        const lastId = seen.ids.at(-1);
        // Before the first event the POST is sent again (same key: the same execution); after it, the execution is resumed by GET.
        const [url, init] =
          seen.executionId === ''
            ? [published(`/workflows/${workflow}/stream`), { method: 'POST', headers, body }]
            : [
                published(`/executions/${seen.executionId}/stream`),
                { headers: { ...headers, ...(lastId === undefined ? {} : { 'last-event-id': String(lastId) }) } },
              ];
        if (attempt > 0) client.ledger.retries += 1;
        if (seen.executionId !== '') seen.resumes += 1;
        const startedAt = performance.now();
        let read;
        try {
          // Half the streams lose their connection after a couple of events, once, and resume where they broke off.
          read = await client.tracked(`stream ${workflow}`, url, (signal) =>
            readEventStream(url, init, attempt === 0 && dropFirst ? 2 : Infinity, signal),
          );
        } catch {
          client.ledger.dropped += 1;
          await client.pauseAfter(undefined, attempt);
          continue;
        }
        client.record(`stream ${workflow}`, url, read.status, read.headers, read.text, startedAt);
        if (read.status !== 200) {
          if (read.status === 204) seen.completed = seen.completed || seen.ids.length > 0;
          await client.pauseAfter(read.headers, attempt);
          continue;
        }
        const executionId = read.headers.get('x-execution-id');
        if (executionId && seen.executionId === '') {
          seen.executionId = executionId;
          noteKey(idempotencyKey, executionId);
          record.runs.set(executionId, record.runs.get(executionId) ?? { executionId, workflow, idempotencyKey });
        }
        take(seen, read.events);
      }
      if (seen.executionId !== '') record.streams.push(seen);
    };

  function take(seen: StreamRecord, events: StreamedEvent[]) {
    for (const event of events) {
      if (event.id !== undefined) seen.ids.push(event.id);
      if (event.event === 'complete') seen.completed = true;
    }
  }

  const weighted: [number, (random: Random) => Action][] = [
    [24, () => callEvent()],
    [18, () => dialogEvent(3, 20)],
    [4, () => dialogEvent(1_500, 300)],
    [10, (random) => duplicate(random)],
    [10, (random) => async () => void (await execute('echo', { callback: random() < 0.5 }))],
    [5, () => async () => void (await execute('echo', { twice: true }))],
    [5, () => async () => void (await execute('agent'))],
    [8, (random) => stream('echo', random)],
    [4, (random) => stream('agent', random)],
    [8, (random) => approval(random)],
  ];
  const total = weighted.reduce((sum, [weight]) => sum + weight, 0);
  return {
    pick(random: Random): Action {
      let roll = random() * total;
      for (const [weight, make] of weighted) {
        roll -= weight;
        if (roll < 0) return make(random);
      }
      return weighted[0]![1](random);
    },
  };
}

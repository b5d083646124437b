import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '#lib/admin/cli.ts';
import { seededRandom } from '#lib/twin/faults.ts';
import { HANDOFF_EVENTS_FILE_NAME } from '#lib/twin/twin.ts';
import { startCallbackReceiver } from './callback-receiver.ts';
import { retryingClient, type Answer, type RetryingClient } from './client.ts';
import { sweeper, type CollectionTarget } from './collector.ts';
import { recordingBytes } from './expected-conversation.ts';
import { publishedContext } from './published-context.ts';
import { publishedActions } from './published-traffic.ts';
import { newTrafficRecord, type LinkSetup, type TrafficRecord, type TrafficSetup } from './traffic-record.ts';
import { webhookActions } from './webhook-traffic.ts';

export type { TrafficRecord, TrafficSetup } from './traffic-record.ts';

type Random = () => number;
type Action = () => Promise<void>;

/**
 * Mixed traffic on both APIs, as their callers send it (webhook-traffic.ts, published-traffic.ts, stream-traffic.ts),
 * spread over several keys and links, with collection sweeps beside it (collector.ts). What each request was answered
 * with goes into the record the invariants read (invariants.ts).
 */
export interface TrafficTarget extends CollectionTarget {
  /** The Published API's base URL (the twin's REST API). */
  url: string;
  /** The webhook API's base URL (the twin's HTTP API, a host of its own). */
  webhookUrl: string;
  dataDir: string;
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

export interface SetupOptions {
  /** API keys to spread the workflow API's requests over (each may make 600 a minute). */
  keys?: number;
  /** Webhook links of each type (each may take 600 requests a minute). */
  linksPerKind?: number;
}

const WORKFLOWS_DIR = fileURLToPath(new URL('./workflows/', import.meta.url));
/** The tooled agents' secret, read from SSM by each agent at its first tool call. */
const TOOL_SECRET = 'CHAOS_TOOL_KEY';
const prepared = new Map<string, Promise<TrafficSetup>>();

async function admin(argv: string[], stdin?: string): Promise<Record<string, string>> {
  const result = await runCli([...argv, '--json'], stdin === undefined ? undefined : { stdin: () => Promise.resolve(`${stdin}\n`) });
  const output = JSON.parse(result.stdout) as Record<string, string>;
  if (result.exitCode !== 0) throw new Error(`admin ${argv.join(' ')} failed: ${output.error}`);
  return output;
}

/** A sweep of the task now, through the admin CLI on the twin of DATA_DIR (set by prepareTraffic), waiting for its end. */
export const collectThroughCli = (taskId: string) => admin(['collect', '--task', taskId]);

/**
 * Publishes the chaos workflows (and the tooled agent, whose tool is the callback receiver's `/tool`), sets its secret,
 * creates the keys, and issues, binds and gives a collection task to each link, through the admin CLI on the target's
 * DATA_DIR (set here). Once per data directory.
 */
export function prepareTraffic(target: TrafficTarget, options: SetupOptions = {}): Promise<TrafficSetup> {
  let setup = prepared.get(target.dataDir);
  if (!setup) {
    setup = prepare(target, options);
    prepared.set(target.dataDir, setup);
  }
  return setup;
}

async function prepare(target: TrafficTarget, options: SetupOptions): Promise<TrafficSetup> {
  process.env.DATA_DIR = target.dataDir;
  const callbacks = await startCallbackReceiver();
  const workflows = mkdtempSync(join(tmpdir(), 'chaos-workflows-'));
  try {
    for (const file of readdirSync(WORKFLOWS_DIR).filter((name) => name.endsWith('.json')))
      copyFileSync(join(WORKFLOWS_DIR, file), join(workflows, file));
    writeFileSync(join(workflows, 'tooled.json'), JSON.stringify(tooledWorkflow(callbacks.url('').replace(/\/hook\/$/, '/tool'))));
    await admin(['publish', workflows]);
  } finally {
    rmSync(workflows, { recursive: true, force: true });
  }
  await admin(['secrets', 'set', TOOL_SECRET, '--project', 'default'], 'chaos-tool-secret');
  const keys: string[] = [];
  for (let i = 0; i < (options.keys ?? 2); i++)
    keys.push((await admin(['keys', 'create', '--name', `chaos-${i}`, '--preset', 'full'])).key!);
  const links: LinkSetup[] = [];
  for (const kind of ['calls', 'dialogs'] as const) {
    for (let i = 0; i < (options.linksPerKind ?? 2); i++) {
      const issued = await admin(['links', 'issue', '--type', kind]);
      const bound = await admin(['links', 'bind', issued.link_id!]);
      const task = await admin(['tasks', 'create', '--link', issued.link_id!]);
      links.push({ kind, linkId: issued.link_id!, token: issued.token!, taskId: task.task_id!, sourceId: bound.source_id! });
    }
  }
  const { startRecordingServer } = await import('../support/https-recording-server.ts');
  const recordings = await startRecordingServer();
  recordings.route('/rec/', (request, response) =>
    response.writeHead(200, { 'content-type': 'audio/mpeg' }).end(recordingBytes(request.url ?? '')),
  );
  return { keys, links, recordings, callbacks, announcementsFile: join(target.dataDir, HANDOFF_EVENTS_FILE_NAME) };
}

/**
 * Two scripted agents, each calling an HTTP tool whose header holds a secret (each agent reads it from SSM once, so an
 * execution makes two reads), then replying.
 */
function tooledWorkflow(toolUrl: string) {
  const agent = (next: string) => ({
    type: 'agent',
    provider: 'scripted',
    tools: ['lookup'],
    next,
    script: [{ tool_calls: [{ tool: 'lookup', arguments: {} }] }, { reply: 'found: {{tool_results.lookup.found}}' }],
  });
  return {
    id: 'tooled',
    name: 'Tooled',
    description: 'Two agents calling an HTTP tool with a secret header',
    start: 'first',
    tools: { lookup: { type: 'http', url: toolUrl, headers: { 'x-api-key': `{{secret.${TOOL_SECRET}}}` } } },
    nodes: { first: agent('second'), second: agent('done'), done: { type: 'end', output: '{{nodes.second.output}}' } },
  };
}

export interface Traffic {
  record: TrafficRecord;
  /** One sweep of every task, recorded as the mix's own are (settle.ts sweeps with it after the traffic). */
  sweep: () => Promise<void>;
}

/** Runs the mix on `concurrency` workers for `durationMs`, then answers what was sent and how it was answered. */
export async function runTraffic(target: TrafficTarget, options: TrafficOptions): Promise<Traffic> {
  const setup = await prepareTraffic(target);
  const client =
    options.client ??
    retryingClient({ onAnswer: (answer: Answer) => options.onRequest?.({ label: answer.label, status: answer.status, ms: answer.ms }) });
  const record = newTrafficRecord(client.ledger);
  const sweeps = sweeper(target, setup, record);
  const actions = trafficMix(target, setup, client, record);
  const endAt = Date.now() + options.durationMs;
  const worker = async (index: number) => {
    const random = seededRandom(options.seed * 1_000 + index);
    while (Date.now() < endAt || client.ledger.answers.length < (options.minAnswers ?? 0)) await actions.pick(random)();
  };
  const collector = async () => {
    const every = options.collectEveryMs ?? 20_000;
    while (Date.now() + every < endAt) {
      await new Promise((resolve) => setTimeout(resolve, every));
      await sweeps.round();
    }
  };
  await Promise.all([...Array.from({ length: options.concurrency }, (_, index) => worker(index)), collector()]);
  record.requests = client.ledger.answers.length + client.ledger.dropped;
  return { record, sweep: () => sweeps.round() };
}

/** Every kind of request of the mix, and how often each is drawn. */
function trafficMix(target: TrafficTarget, setup: TrafficSetup, client: RetryingClient, record: TrafficRecord) {
  const webhook = webhookActions(target.webhookUrl, setup, client, record);
  const published = publishedActions(publishedContext(target.url, setup, client, record));
  const weighted: [number, (random: Random) => Action][] = [
    [18, webhook.call],
    [14, webhook.dialog],
    [3, webhook.largeDialog],
    [8, webhook.duplicate],
    [3, webhook.racingDuplicate],
    [3, webhook.crossLink],
    [8, published.execute('echo', { callbackShare: 0.6 })],
    [3, published.execute('echo', { twice: true })],
    [3, published.concurrentKey],
    [3, published.execute('agent', { callbackShare: 0.2 })],
    [2, published.execute('tooled')],
    [6, published.stream('echo')],
    [3, published.stream('agent')],
    [6, published.approval],
    [2, published.stopAtApproval],
    [3, published.stopRacingDecision],
    [2, published.stopAfterEnd],
    [3, published.stopWhileStreaming],
    [3, published.subscription],
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

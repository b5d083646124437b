import { randomBytes, randomUUID } from 'node:crypto';
import type { CallbackBehaviour, CallbackPlan } from './callback-plan.ts';
import type { PublishedContext } from './published-context.ts';
import { streamRun, subscribe } from './stream-traffic.ts';
import { noteKeyAnswer, noteKind, type Decision, type StartedRun, type Workflow } from './traffic-record.ts';

type Random = () => number;
type Action = () => Promise<void>;

/**
 * The receivers executions with a callback get, in turn (callback-receiver.ts): every kind comes round within ten
 * callbacks, so even a short run meets each; four in ten take the callback at once.
 */
const RECEIVERS: CallbackBehaviour[] = [
  'accept',
  'fail-twice',
  'accept',
  'always-fail',
  'slow',
  'accept',
  'late',
  'redirect',
  'accept',
  'reset-once',
];

function callbackPlan(turn: number, random: Random): CallbackPlan {
  const behaviour = RECEIVERS[turn % RECEIVERS.length]!;
  const signing = random();
  // Half sign with a secret used as its bytes, a quarter with a Standard Webhooks `whsec_` secret, a quarter unsigned.
  const secret = signing < 0.5 ? `chaos-${randomUUID()}` : signing < 0.75 ? `whsec_${randomBytes(24).toString('base64')}` : undefined;
  return { behaviour, ...(secret ? { secret } : {}) };
}

export interface ExecuteOptions {
  callback?: boolean;
  /** This receiver rather than the next in turn, and this key (the suite's own checks, which watch the receiver). */
  callbackPlan?: CallbackPlan;
  idempotencyKey?: string;
  /** The same request sent again once answered (same Idempotency-Key). */
  twice?: boolean;
  /** The same request sent at the same moment again: `execute` twice, or execute beside a stream (same key, same body). */
  concurrently?: 'execute' | 'stream';
}

/**
 * The workflow API's side of the mix, besides plain streams: blocking executions (with callbacks to receivers of every
 * kind), one Idempotency-Key sent again and sent concurrently, approvals decided (sometimes twice, sometimes watched
 * through `/events`), stops sent while streaming, at an approval, racing a decision and after the end, and lifecycle
 * subscriptions of executions under way.
 */
export function publishedActions(context: PublishedContext) {
  const { client, record, setup } = context;
  let callbacks = 0;

  async function execute(workflow: Workflow, random: Random, options: ExecuteOptions = {}): Promise<StartedRun | undefined> {
    const idempotencyKey = options.idempotencyKey ?? randomUUID();
    const callback =
      options.callback || options.callbackPlan
        ? { tag: idempotencyKey, ...(options.callbackPlan ?? callbackPlan(callbacks++, random)) }
        : undefined;
    if (callback) setup.callbacks.plan(callback.tag, callback);
    const body = JSON.stringify({
      user_id: `chaos-${idempotencyKey}`,
      input: { message: 'hello' },
      ...(callback ? { callback_url: setup.callbacks.url(callback.tag) } : {}),
      ...(callback?.secret ? { webhook_secret: callback.secret } : {}),
    });
    const headers = context.headers(random, { 'idempotency-key': idempotencyKey });
    let run: StartedRun | undefined;
    const once = async () => {
      const answer = await client.send(`execute ${workflow}`, context.url(`/workflows/${workflow}/execute`), {
        method: 'POST',
        headers,
        body,
      });
      if (answer?.status !== 200) return;
      const { execution_id: executionId, status } = JSON.parse(answer.text) as { execution_id: string; status: string };
      noteKeyAnswer(record, idempotencyKey, executionId);
      const known = record.runs.has(executionId);
      run = context.runOf(executionId, workflow, idempotencyKey);
      if (!known) Object.assign(run, { answeredStatus: status, ...(callback ? { callback } : {}) });
    };
    if (options.concurrently === 'execute') await Promise.all([once(), once()]);
    else if (options.concurrently === 'stream') await Promise.all([once(), streamRun(context, workflow, random, { body, idempotencyKey })]);
    else {
      await once();
      if (options.twice) await once();
    }
    // A stream that joined first made the run: the callback is the request's either way.
    if (run && callback && !run.callback) run.callback = callback;
    return run;
  }

  /** As a caller does: decides only once the execution waits at its approval (a blocking execute may answer it still going). */
  async function waitingAtApproval(run: StartedRun, random: Random): Promise<boolean> {
    let status = run.answeredStatus;
    for (let read = 0; status !== 'interrupted' && read < 60; read++) {
      if (status !== undefined && status !== 'queued' && status !== 'running') return false;
      await client.sleep(1_000);
      const answer = await client.send('get execution', context.url(`/executions/${run.executionId}`), {
        headers: context.headers(random),
      });
      status = answer?.status === 200 ? (JSON.parse(answer.text) as { status: string }).status : undefined;
    }
    return status === 'interrupted';
  }

  async function decide(run: StartedRun, decision: Decision, random: Random, racingStop = false): Promise<void> {
    noteKind(record, racingStop ? `${decision} racing a stop` : decision);
    const answer = await client.send(decision, context.url(`/executions/${run.executionId}/${decision}`), {
      method: 'POST',
      headers: context.headers(random),
      body: JSON.stringify({ feedback: decision }),
    });
    run.decisions.push({ decision, status: answer?.status, racingStop });
  }

  const other = (decision: Decision): Decision => (decision === 'approve' ? 'reject' : 'approve');
  const drawDecision = (random: Random): Decision => (random() < 0.5 ? 'approve' : 'reject');

  /** A gate executed and waited at; `then` does what the action is about. */
  const atApproval =
    (kind: string, then: (run: StartedRun, random: Random) => Promise<void>) =>
    (random: Random): Action =>
    async () => {
      noteKind(record, kind);
      const run = await execute('gate', random, { callback: random() < 0.5 });
      if (run && (await waitingAtApproval(run, random))) await then(run, random);
    };

  return {
    /** The pieces the actions are made of, for the suite's defect checks to send one at a time. */
    startExecution: execute,
    waitingAtApproval,
    decide,
    execute:
      (workflow: Workflow, options: { callbackShare?: number; twice?: boolean } = {}) =>
      (random: Random): Action =>
      async () => {
        noteKind(record, `execute ${workflow}${options.twice ? ' twice with one key' : ''}`);
        await execute(workflow, random, { callback: random() < (options.callbackShare ?? 0), twice: options.twice });
      },
    /** One Idempotency-Key sent twice at once, on execute or on execute and stream: one execution for both. */
    concurrentKey:
      (random: Random): Action =>
      async () => {
        const concurrently = random() < 0.5 ? 'execute' : 'stream';
        noteKind(record, `one key sent concurrently (${concurrently})`);
        await execute('echo', random, { concurrently });
      },
    stream:
      (workflow: Workflow) =>
      (random: Random): Action =>
      async () => {
        noteKind(record, `stream ${workflow}`);
        await streamRun(context, workflow, random, { dropFirst: random() < 0.5 });
      },
    approval: atApproval('approval', async (run, random) => {
      const decision = drawDecision(random);
      // Half the approvals are watched through /events from before the decision to the end, which never comes when
      // no decision applied (its answers all refusals): then the watcher leaves.
      const leave = new AbortController();
      const watching =
        random() < 0.5
          ? subscribe(context, run.executionId, random, { beforeDecision: true, dropFirst: random() < 0.3, leave: leave.signal })
          : undefined;
      await decide(run, decision, random);
      if (random() < 0.3) await decide(run, other(decision), random);
      if (!run.decisions.some((sent) => sent.status === 200)) leave.abort();
      await watching;
    }),
    stopAtApproval: atApproval('stop at an approval', async (run, random) => {
      await context.stop(run, 'approval', random);
      await decide(run, drawDecision(random), random);
    }),
    stopRacingDecision: atApproval('stop racing a decision', async (run, random) => {
      await Promise.all([decide(run, drawDecision(random), random, true), context.stop(run, 'race', random)]);
    }),
    stopAfterEnd:
      (random: Random): Action =>
      async () => {
        noteKind(record, 'execute echo, then stop');
        const run = await execute('echo', random, { callback: random() < 0.3 });
        if (run && run.answeredStatus === 'completed') await context.stop(run, 'ended', random);
      },
    stopWhileStreaming:
      (random: Random): Action =>
      async () => {
        noteKind(record, 'stream slow, stopped');
        await streamRun(context, 'slow', random, { stopAfterEvents: 3 });
      },
    /** A slow execution streamed, and its lifecycle followed through /events from the moment it is known. */
    subscription:
      (random: Random): Action =>
      async () => {
        noteKind(record, 'events of an execution under way');
        let watching: Promise<unknown> | undefined;
        await streamRun(context, 'slow', random, {
          onExecutionId: (executionId) => {
            watching = subscribe(context, executionId, random, { dropFirst: random() < 0.3 });
          },
        });
        await watching;
      },
  };
}

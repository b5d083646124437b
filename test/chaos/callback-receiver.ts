import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { CALLBACK_ATTEMPT_TIMEOUT_MS } from '#shared/limits.ts';
import type { CallbackBehaviour, CallbackPlan } from './callback-plan.ts';

/**
 * Where executions' completion callbacks land (loopback, allowed on the twin by ALLOW_LOOPBACK_CALLBACKS=1): each
 * execution its own path, and each path a receiver of its own kind, so the retry ladder and the give-up run too. Every
 * delivery is verified as a Standard Webhooks receiver does it, when it arrives (the signature's timestamp is only good
 * for minutes). It also serves the tooled agent's HTTP tool (`/tool`).
 */
export interface Delivery {
  webhookId: string;
  /** `accepted`: answered 2xx; `late`: the sender left before the answer; `pending`: not answered yet. */
  outcome: 'pending' | 'accepted' | 'refused' | 'redirected' | 'reset' | 'late';
  /** As a receiver verifies it: `ok`, `unsigned` (no signature though the execution has a secret), `bad`, or `none` (no secret). */
  signature: 'ok' | 'unsigned' | 'bad' | 'none';
  body: string;
}

export interface CallbackReceiver {
  url(tag: string): string;
  /** Sets how the tag's path answers (default: accept, no secret). */
  plan(tag: string, plan: CallbackPlan): void;
  /** Told of each delivery to the tag's path as it arrives, before it is answered (a test acting at a given attempt). */
  watch(tag: string, listener: (attempt: number) => void): void;
  /** Every delivery to the tag's path, in arrival order. */
  deliveries(tag: string): Delivery[];
  /** Requests to paths no callback names (a followed redirect, a stray): each a finding. */
  strays(): string[];
  /** How many times the HTTP tool was called. */
  toolCalls(): number;
  close(): Promise<void>;
}

const SLOW_MS = 2_000;
/** Well past the sender's timeout, so its leaving has reached this socket on a loaded machine too. */
const LATE_MS = CALLBACK_ATTEMPT_TIMEOUT_MS + 5_000;

export async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const plans = new Map<string, CallbackPlan>();
  const watchers = new Map<string, (attempt: number) => void>();
  const received = new Map<string, Delivery[]>();
  const strays: string[] = [];
  let tools = 0;
  const server = createServer((request, response) => {
    const path = request.url ?? '';
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (path.startsWith('/tool')) {
        tools += 1;
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ found: true, calls: tools }));
        return;
      }
      const tag = /^\/hook\/([^/]+)$/.exec(path)?.[1];
      if (!tag) {
        strays.push(`${request.method} ${path}`);
        response.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const plan = plans.get(tag) ?? { behaviour: 'accept' };
      const earlier = received.get(tag) ?? [];
      const delivery: Delivery = {
        webhookId: String(request.headers['webhook-id'] ?? ''),
        outcome: 'pending',
        signature: verify(plan, body, request),
        body,
      };
      received.set(tag, [...earlier, delivery]);
      watchers.get(tag)?.(earlier.length + 1);
      answer(plan.behaviour, earlier.length, delivery, request, response, (location) => `http://127.0.0.1:${port}${location}`, tag);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (tag) => `http://127.0.0.1:${port}/hook/${tag}`,
    plan: (tag, plan) => void plans.set(tag, plan),
    watch: (tag, listener) => void watchers.set(tag, listener),
    deliveries: (tag) => received.get(tag) ?? [],
    strays: () => [...strays],
    toolCalls: () => tools,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function verify(plan: CallbackPlan, body: string, request: IncomingMessage): Delivery['signature'] {
  if (!plan.secret) return 'none';
  if (!request.headers['webhook-signature']) return 'unsigned';
  try {
    const webhook = plan.secret.startsWith('whsec_') ? new Webhook(plan.secret) : new Webhook(plan.secret, { format: 'raw' });
    webhook.verify(body, request.headers as Record<string, string>);
    return 'ok';
  } catch {
    return 'bad';
  }
}

function answer(
  behaviour: CallbackBehaviour,
  attempt: number,
  delivery: Delivery,
  request: IncomingMessage,
  response: ServerResponse,
  here: (path: string) => string,
  tag: string,
): void {
  const accept = (afterMs = 0) => {
    // Taken only if the sender is still there to read the answer: one that timed out will send it again.
    let left = false;
    response.once('close', () => {
      if (!response.writableFinished) left = true;
    });
    setTimeout(() => {
      if (left || response.destroyed) {
        delivery.outcome = 'late';
        return;
      }
      response.writeHead(204).end();
      delivery.outcome = 'accepted';
    }, afterMs);
  };
  switch (behaviour) {
    case 'accept':
      return accept();
    case 'slow':
      return accept(SLOW_MS);
    case 'late':
      return accept(attempt === 0 ? LATE_MS : 0);
    case 'fail-twice':
      if (attempt >= 2) return accept();
      delivery.outcome = 'refused';
      response.writeHead(503, { 'retry-after': '1' }).end();
      return;
    case 'always-fail':
      delivery.outcome = 'refused';
      response.writeHead(500).end();
      return;
    case 'redirect':
      delivery.outcome = 'redirected';
      response.writeHead(307, { location: here(`/moved/${tag}`) }).end();
      return;
    case 'reset-once':
      if (attempt > 0) return accept();
      delivery.outcome = 'reset';
      request.socket.destroy();
      return;
  }
}

import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A product broken on purpose, in front of the real one: a gateway between the chaos client and the twin (and between
 * the twin and the callback receiver) that makes one kind of mistake the invariants guard against: answers a request
 * itself without sending it on (a 200 that applied nothing), drops a header on the way (an Idempotency-Key, a
 * signature), rewrites an answer (an event left out, an AWS error's name in a refusal), or never answers. The chaos
 * suite drives a few requests through it and checks that each invariant reports what it did.
 */
export interface Exchange {
  method: string;
  /** Path and query, as the client sent them. */
  path: string;
  headers: IncomingHttpHeaders;
}

export type Mistake =
  | { answer: { status: number; body: string } }
  | { hang: true }
  | { forward: { dropHeaders?: string[]; rewrite?: (status: number, body: string) => string } };

export interface DefectiveGateway {
  url: string;
  close(): Promise<void>;
}

/** Hop-by-hop and framing headers, which the gateway sets for itself. */
const OWN_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'content-encoding', 'keep-alive']);

/**
 * `upstream` names where a request goes (the twin, or the callback receiver for `/hook/` paths); `mistake` says what the
 * gateway does wrong with it, or undefined to pass it on unchanged.
 */
export async function startDefectiveGateway(
  upstream: (path: string) => string,
  mistake: (exchange: Exchange) => Mistake | undefined,
): Promise<DefectiveGateway> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const exchange: Exchange = { method: request.method ?? 'GET', path: request.url ?? '/', headers: request.headers };
      const planned = mistake(exchange) ?? { forward: {} };
      if ('hang' in planned) return;
      if ('answer' in planned) {
        response.writeHead(planned.answer.status, { 'content-type': 'application/json' }).end(planned.answer.body);
        return;
      }
      const { dropHeaders = [], rewrite } = planned.forward;
      const headers = Object.fromEntries(
        Object.entries(request.headers).filter(([name]) => !OWN_HEADERS.has(name) && !dropHeaders.includes(name)),
      ) as Record<string, string>;
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      fetch(`${upstream(exchange.path)}${exchange.path}`, { method: exchange.method, headers, body, redirect: 'manual' })
        .then(async (answer) => {
          const text = await answer.text();
          const out = Object.fromEntries([...answer.headers].filter(([name]) => !OWN_HEADERS.has(name)));
          response.writeHead(answer.status, out).end(rewrite ? rewrite(answer.status, text) : text);
        })
        .catch(() => response.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An event stream's text without the event of that id (its frame: `id: N` to the blank line). */
export function withoutEvent(stream: string, id: number): string {
  return stream
    .split('\n\n')
    .filter((frame) => !frame.split('\n').includes(`id: ${id}`))
    .join('\n\n');
}

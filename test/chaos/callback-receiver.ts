import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Where executions' completion callbacks land (loopback, allowed on the twin by ALLOW_LOOPBACK_CALLBACKS=1): each execution its own path. */
export interface CallbackReceiver {
  url(tag: string): string;
  /** The `webhook-id` of each delivery to the tag's path, in arrival order. */
  deliveries(tag: string): string[];
  close(): Promise<void>;
}

export async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const received = new Map<string, string[]>();
  const server = createServer((request, response) => {
    const tag = (request.url ?? '').replace(/^\/hook\//, '');
    request.resume();
    request.on('end', () => {
      received.set(tag, [...(received.get(tag) ?? []), String(request.headers['webhook-id'] ?? '')]);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (tag) => `http://127.0.0.1:${port}/hook/${tag}`,
    deliveries: (tag) => received.get(tag) ?? [],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

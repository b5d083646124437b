import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Starts a stand-in's HTTP server on loopback (`port` 0 picks a free one) and answers its endpoint and how to close
 * it: every open connection ended first, so a twin that stops frees its ports at once.
 */
export async function listenOnLoopback(
  server: Server,
  port = 0,
  host = '127.0.0.1',
): Promise<{ endpoint: string; close(): Promise<void> }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    endpoint: `http://${host}:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

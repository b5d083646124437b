import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { once } from 'node:events';

/**
 * A local HTTPS server standing in for a sender's recording host. Its certificate (test/fixtures/tls/) is for
 * `localhost`, 127.0.0.1 and ::1, and for `recordings.example.com`: a name only an injected lookup can bring here,
 * so a test can tell a pinned connection from one that asked DNS again. It is signed by a throw-away CA whose key
 * was deleted after signing (nobody can mint another certificate these test runs trust); clients trust
 * that CA only when the process starts with NODE_EXTRA_CA_CERTS=test/fixtures/tls/ca.pem, as product code
 * takes no `ca` option. Made once, valid for 100 years, with:
 *
 *   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca-key.pem -out ca.pem -days 36525 \
 *     -subj "/CN=workflow-ingest throw-away test CA" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
 *   openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server-key.pem -out server.csr -subj /CN=localhost
 *   openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 36525 -out server.pem -extfile ext
 *   # ext: subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1,DNS:recordings.example.com / basicConstraints=critical,CA:FALSE
 *   #      keyUsage=critical,digitalSignature / extendedKeyUsage=serverAuth
 */
const TLS_DIR = new URL('../fixtures/tls/', import.meta.url);
export const TEST_CA_PATH = new URL('ca.pem', TLS_DIR).pathname;

interface RecordedRequest {
  method: string;
  /** The request target (path and query) exactly as it arrived. */
  path: string;
  headers: IncomingHttpHeaders;
}

type RouteHandler = (request: IncomingMessage, response: ServerResponse) => void;

export interface RecordingServer {
  port: number;
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** `https://<host>:<port><path>`: 127.0.0.1 unless another name for the same server is wanted. */
  href(path: string, host?: string): string;
  /** Every request, in arrival order, with the target exactly as it arrived. */
  requests: RecordedRequest[];
  /** File bytes the routes have handed to their sockets so far (how a test sees backpressure reach the server). */
  fileBytesSent(): number;
  /** TCP connections accepted so far, handshake or not. */
  connectionCount(): number;
  openConnectionCount(): number;
  /** Resolves once every connection has closed (how a test sees that the client really gave up). */
  whenIdle(): Promise<void>;
  /** Adds or replaces a route for this path (query ignored); a path ending in `/` serves everything under it. */
  route(path: string, handler: RouteHandler): void;
  /** Serves `size` deterministic bytes (fileBytes) at this path and answers their SHA-256. */
  file(path: string, size: number, contentType?: string): { bytes: number; sha256: string };
  redirect(path: string, location: string, status?: number): void;
  notFound(path: string): void;
  close(): Promise<void>;
}

/** Byte i of every served file: deterministic, and not a short repeating pattern that would hide misplaced chunks. */
export function fileBytes(start: number, end: number): Buffer {
  const bytes = Buffer.alloc(end - start);
  for (let i = start; i < end; i++) bytes[i - start] = (Math.imul(i, 2654435761) >>> 24) ^ (i & 0xff);
  return bytes;
}

const CHUNK = 64 * 1024;

/** Writes bytes [from, to) in chunks, waiting for the socket to drain like a real file server. */
async function writeFile(response: ServerResponse, from: number, to: number, sent: (bytes: number) => void): Promise<void> {
  for (let offset = from; offset < to && !response.destroyed; offset += CHUNK) {
    const chunk = fileBytes(offset, Math.min(offset + CHUNK, to));
    sent(chunk.length);
    if (!response.write(chunk)) await drainedOrClosed(response);
  }
}

/** A client that went away never drains; `once` for each event would leave a listener behind per chunk. */
function drainedOrClosed(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off('drain', done).off('close', done);
      resolve();
    };
    response.on('drain', done).on('close', done);
  });
}

function serveFile(response: ServerResponse, length: number, contentType: string, sent: (bytes: number) => void): void {
  response.writeHead(200, { 'content-type': contentType, 'content-length': length });
  void writeFile(response, 0, length, sent).then(() => response.end());
}

const redirectTo =
  (location: string, status: number): RouteHandler =>
  (_request, response) =>
    response.writeHead(status, { location }).end();

const notFound: RouteHandler = (_request, response) => response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');

/** The exact path's route, else the longest `/`-ended prefix route it falls under. */
function routeFor(routes: Map<string, RouteHandler>, target: string): RouteHandler | undefined {
  const path = target.split('?')[0] ?? '';
  const exact = routes.get(path);
  if (exact) return exact;
  const prefix = [...routes.keys()]
    .filter((candidate) => candidate.endsWith('/') && path.startsWith(candidate))
    .sort((a, b) => b.length - a.length)[0];
  return prefix === undefined ? undefined : routes.get(prefix);
}

const lengthFrom = (request: IncomingMessage) => Number(/^\/[^/]+\/(\d+)/.exec(request.url ?? '')?.[1] ?? 0);

/** `/file/<n>` (n bytes, streamed), `/redirect`, `/missing`, `/hang`, `/stall/<n>` (n of 2n bytes, then silence), `/truncated`, `/echo/...`. */
function defaultRoutes(sent: (bytes: number) => void): Map<string, RouteHandler> {
  return new Map<string, RouteHandler>([
    ['/file/', (request, response) => serveFile(response, lengthFrom(request), 'audio/mpeg', sent)],
    ['/redirect-target', (_request, response) => response.end('you should not be here')],
    ['/redirect', redirectTo('/redirect-target', 302)],
    ['/missing', notFound],
    ['/hang', () => undefined],
    [
      '/stall/',
      (request, response) => {
        const length = lengthFrom(request);
        response.writeHead(200, { 'content-length': 2 * length });
        void writeFile(response, 0, length, sent);
      },
    ],
    [
      '/truncated',
      (_request, response) => {
        response.writeHead(200, { 'content-length': 1000 });
        response.write(fileBytes(0, 500), () => response.socket?.destroy());
      },
    ],
    ['/echo/', (_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('ok')],
  ]);
}

/**
 * Whether this process trusts the test CA, i.e. started with NODE_EXTRA_CA_CERTS pointing at it (a variable set to
 * another bundle, as on some CI images, is not enough). The probe only reads the verdict, so it does not reject.
 */
export async function trustsTestCa(server: RecordingServer): Promise<boolean> {
  const socket = tlsConnect({ host: '127.0.0.1', port: server.port, servername: 'localhost', rejectUnauthorized: false });
  try {
    await once(socket, 'secureConnect');
    return socket.authorized;
  } finally {
    socket.destroy();
  }
}

export async function startRecordingServer(): Promise<RecordingServer> {
  let sentBytes = 0;
  const sent = (bytes: number) => void (sentBytes += bytes);
  const routes = defaultRoutes(sent);
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  let idleWaiters: (() => void)[] = [];

  const server: Server = createServer(
    { key: readFileSync(new URL('server-key.pem', TLS_DIR)), cert: readFileSync(new URL('server.pem', TLS_DIR)) },
    (request, response) => {
      requests.push({ method: request.method ?? '', path: request.url ?? '', headers: request.headers });
      (routeFor(routes, request.url ?? '') ?? notFound)(request, response);
    },
  );
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      if (sockets.size > 0) return;
      const waiters = idleWaiters;
      idleWaiters = [];
      waiters.forEach((wake) => wake());
    });
  });
  // A client that gives up mid-handshake is expected here, not a test failure.
  server.on('tlsClientError', () => undefined);

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    url: `https://127.0.0.1:${port}`,
    href: (path, host = '127.0.0.1') => `https://${host}:${port}${path}`,
    requests,
    fileBytesSent: () => sentBytes,
    connectionCount: () => connections,
    openConnectionCount: () => sockets.size,
    whenIdle: () => (sockets.size === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve))),
    route: (path, handler) => void routes.set(path, handler),
    file: (path, size, contentType = 'audio/mpeg') => {
      routes.set(path, (_request, response) => serveFile(response, size, contentType, sent));
      return { bytes: size, sha256: createHash('sha256').update(fileBytes(0, size)).digest('hex') };
    },
    redirect: (path, location, status = 302) => void routes.set(path, redirectTo(location, status)),
    notFound: (path) => void routes.set(path, notFound),
    close: async () => {
      // Sockets still in their handshake are not the HTTP server's to close.
      sockets.forEach((socket) => socket.destroy());
      server.close();
      await once(server, 'close');
    },
  };
}

import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { downloadRecording, RecordingDownloadError, type DownloadOptions, type SinkContext } from '#collection/recording-download.ts';
import { fileBytes, startRecordingServer, TEST_CA_PATH, trustsTestCa, type RecordingServer } from '../support/https-recording-server.ts';

/**
 * Downloads against a local HTTPS server with a real (test CA) certificate, so TLS, redirects, timeouts and
 * address pinning run through node's own https client as in production; only DNS is injected.
 */
let server: RecordingServer;

beforeAll(async () => {
  server = await startRecordingServer();
  if (!(await trustsTestCa(server))) {
    throw new Error(`Start the test run with NODE_EXTRA_CA_CERTS=${TEST_CA_PATH}: the test server's CA is trusted only that way`);
  }
});
afterAll(() => server?.close());

const loopback: DownloadOptions = { allowLoopback: true, timeoutMs: 10_000 };
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A sink that keeps what it reads, chunk by chunk, and what the downloader told it. */
function collectingSink() {
  const chunks: Buffer[] = [];
  const contexts: SinkContext[] = [];
  const sink = async (body: Readable, context: SinkContext) => {
    contexts.push(context);
    for await (const chunk of body) chunks.push(chunk as Buffer);
  };
  return { sink, chunks, contexts, received: () => Buffer.concat(chunks) };
}

const discard = async (body: Readable) => {
  for await (const _chunk of body) {
    // read and drop
  }
};

/** The download's failure, which must be a RecordingDownloadError. */
async function failureOf(download: Promise<unknown>): Promise<RecordingDownloadError> {
  const error = await download.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(RecordingDownloadError);
  return error as RecordingDownloadError;
}

describe('downloadRecording', () => {
  it('streams a 2.5 MB file byte for byte, with its size, SHA-256 and content type', async () => {
    const length = 2.5 * 1024 * 1024;
    const lookup = vi.fn();
    const { sink, chunks, contexts, received } = collectingSink();

    const result = await downloadRecording(server.href(`/file/${length}`), sink, { ...loopback, lookup });

    const expected = fileBytes(0, length);
    expect(result).toEqual({ bytes: length, sha256: sha256(expected) });
    expect(received().equals(expected)).toBe(true);
    expect(chunks.length).toBeGreaterThan(10); // arrived as a stream, not one buffer
    expect(contexts[0]?.contentType).toBe('audio/mpeg');
    expect(lookup).not.toHaveBeenCalled(); // an address literal needs no DNS
  });

  it('lets backpressure from a slow sink reach the server, so memory stays flat', async () => {
    const length = 64 * 1024 * 1024;
    const before = server.fileBytesSent();
    let sentWhileSinkWaited = 0;
    const slowSink = async (body: Readable) => {
      await sleep(500);
      sentWhileSinkWaited = server.fileBytesSent() - before;
      await discard(body);
    };

    const result = await downloadRecording(server.href(`/file/${length}`), slowSink, loopback);

    expect(result.bytes).toBe(length);
    expect(sentWhileSinkWaited).toBeLessThan(24 * 1024 * 1024);
  });

  it('fails on a redirect and never requests its target', async () => {
    const error = await failureOf(downloadRecording(server.href('/redirect'), discard, loopback));
    expect(error.reason).toBe('redirect (302) not followed');
    expect(error.name).toBe('RecordingDownloadError');
    await sleep(100);
    expect(server.requests.map((request) => request.path)).not.toContain('/redirect-target');
  });

  it('fails on any status but 200', async () => {
    const error = await failureOf(downloadRecording(server.href('/missing'), discard, loopback));
    expect(error.reason).toBe('HTTP 404');

    server.route('/no-content', (_request, response) => response.writeHead(204).end());
    expect((await failureOf(downloadRecording(server.href('/no-content'), discard, loopback))).reason).toBe('HTTP 204');
    // 304 names no other location: it is no redirect.
    server.route('/not-modified', (_request, response) => response.writeHead(304).end());
    expect((await failureOf(downloadRecording(server.href('/not-modified'), discard, loopback))).reason).toBe('HTTP 304');
  });

  it('says in words that a server answered with something that is not HTTP', async () => {
    server.route('/garbage', (request) => request.socket.end('NOT HTTP AT ALL\r\n\r\n'));
    const error = await failureOf(downloadRecording(server.href('/garbage'), discard, loopback));
    expect(error.reason).toBe('connection failed: the server sent an invalid HTTP response');
  });

  it('gives up on a server that never answers at the deadline and closes the connection', async () => {
    // The server never answers: only the deadline ends the download (a test that hung would fail at its own timeout).
    const error = await failureOf(downloadRecording(server.href('/hang'), discard, { ...loopback, timeoutMs: 300 }));
    expect(error.reason).toBe('timed out after 0.3 s');
    await server.whenIdle();
  });

  it('holds one deadline over the whole transfer: a body that stalls fails, and the sink is aborted', async () => {
    const { sink, contexts, received } = collectingSink();
    const sinkOutcome: unknown[] = [];
    const watchedSink = (body: Readable, context: SinkContext) =>
      sink(body, context).then(
        () => void sinkOutcome.push('finished'),
        (error: unknown) => void sinkOutcome.push(error),
      );

    const error = await failureOf(downloadRecording(server.href('/stall/100000'), watchedSink, { ...loopback, timeoutMs: 500 }));

    expect(error.reason).toBe('timed out after 0.5 s');
    expect(received().length).toBe(100_000);
    expect(contexts[0]?.signal.aborted).toBe(true);
    expect(sinkOutcome).toHaveLength(1);
    expect(sinkOutcome[0]).not.toBe('finished');
    await server.whenIdle();
  });

  it('fails when the body breaks off before its length', async () => {
    const error = await failureOf(downloadRecording(server.href('/truncated'), discard, loopback));
    expect(error.reason).toMatch(/^transfer broke off/);
  });

  it('passes a failing sink its own error and closes the connection', async () => {
    const diskFull = new Error('disk full');
    const failingSink = async (body: Readable) => {
      body.once('data', () => undefined);
      await sleep(20);
      throw diskFull;
    };
    await expect(downloadRecording(server.href(`/file/${8 * 1024 * 1024}`), failingSink, loopback)).rejects.toBe(diskFull);
    await server.whenIdle();
  });

  it.each([
    ['http://127.0.0.1:1/file/10', 'scheme must be https'],
    ['http://localhost:1/file/10', 'scheme must be https'],
    ['ftp://localhost/file/10', 'scheme must be https'],
    ['https://127.0.0.1\\@records.example.com/file/10', 'must not contain backslashes'],
    ['https://user@localhost/file/10', 'must not contain credentials'],
    ['https://127.1/file/10', 'host is an ambiguous numeric address'],
  ])('refuses %s even with loopback allowed', async (url, reason) => {
    const connections = server.connectionCount();
    expect((await failureOf(downloadRecording(url, discard, loopback))).reason).toBe(reason);
    expect(server.connectionCount()).toBe(connections);
  });

  it.each([['10.0.0.1'], ['169.254.169.254'], ['192.168.1.20'], ['127.0.0.1'], ['::1'], ['fd00::1'], ['::ffff:10.0.0.1']])(
    'refuses a name that resolves to %s without connecting',
    async (address) => {
      const lookup = vi.fn(async () => [{ address, family: address.includes(':') ? 6 : 4 }]);
      const connections = server.connectionCount();

      const error = await failureOf(
        downloadRecording('https://recordings.example.com/a.mp3', discard, { allowLoopback: false, timeoutMs: 5_000, lookup }),
      );

      expect(error.reason).toBe(`host resolves to the non-public address ${address}`);
      expect(lookup).toHaveBeenCalledWith('recordings.example.com');
      expect(server.connectionCount()).toBe(connections);
    },
  );

  it('refuses a name when any one of its addresses is not public', async () => {
    const lookup = vi.fn(async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ]);
    const error = await failureOf(
      downloadRecording('https://recordings.example.com/a.mp3', discard, { allowLoopback: false, timeoutMs: 5_000, lookup }),
    );
    expect(error.reason).toBe('host resolves to the non-public address 10.0.0.1');
  });

  it('refuses a loopback name that also resolves to a private address, before connecting to the loopback one', async () => {
    const lookup = vi.fn(async () => [
      { address: '127.0.0.1', family: 4 },
      { address: '192.168.1.20', family: 4 },
    ]);
    const connections = server.connectionCount();
    const error = await failureOf(downloadRecording(server.href('/file/10', 'localhost'), discard, { ...loopback, lookup }));
    expect(error.reason).toBe('host resolves to the non-public address 192.168.1.20');
    expect(server.connectionCount()).toBe(connections);
  });

  it.each([
    ['127.0.0.1', 'host must be a public address'],
    ['localhost', 'host must be a public domain name'],
    ['[::1]', 'host must be a public address'],
  ])('refuses https://%s without allowLoopback', async (host, reason) => {
    const connections = server.connectionCount();
    const error = await failureOf(downloadRecording(server.href('/file/10', host), discard, { allowLoopback: false, timeoutMs: 5_000 }));
    expect(error.reason).toBe(reason);
    expect(server.connectionCount()).toBe(connections);
  });

  it('resolves the name once and connects to that answer, whatever DNS says next (rebinding)', async () => {
    // Only this lookup brings recordings.example.com to the server: a connection that asked DNS itself would miss it.
    const answers = ['127.0.0.1', '10.0.0.1'];
    const lookup = vi.fn(async () => [{ address: answers[Math.min(lookup.mock.calls.length - 1, 1)]!, family: 4 }]);
    const { sink, received } = collectingSink();

    const result = await downloadRecording(server.href('/file/1000', 'recordings.example.com'), sink, { ...loopback, lookup });

    expect(result.bytes).toBe(1000);
    expect(received().equals(fileBytes(0, 1000))).toBe(true);
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(server.requests.at(-1)?.headers.host).toBe(`recordings.example.com:${server.port}`);
  });

  it('checks the certificate against the host name, not the pinned address', async () => {
    const lookup = vi.fn(async () => [{ address: '127.0.0.1', family: 4 }]);
    const connections = server.connectionCount();
    const error = await failureOf(downloadRecording(server.href('/file/10', 'other.example.com'), discard, { ...loopback, lookup }));
    expect(error.reason).toBe('connection failed (ERR_TLS_CERT_ALTNAME_INVALID)');
    expect(server.connectionCount()).toBe(connections + 1); // it did reach the pinned address, and stopped at the name
    expect(server.requests.some((request) => request.path === '/file/10' && request.headers.host?.startsWith('other.'))).toBe(false);
  });

  it('sends no credentials and the path and query exactly as written', async () => {
    const target = "/echo/a%2Fb/./c/../d?X-Amz-Signature=AbC%2F%2B%3D&x=1&x=2&empty=&quote='q'&tilde=%7e";
    const { sink, received } = collectingSink();

    await downloadRecording(server.href(`${target}#fragment`), sink, loopback);

    expect(received().toString()).toBe('ok');
    const request = server.requests.findLast((candidate) => candidate.path.startsWith('/echo/'));
    expect(request?.method).toBe('GET');
    expect(request?.path).toBe(target);
    expect(request?.headers.authorization).toBeUndefined();
    expect(request?.headers.cookie).toBeUndefined();
    expect(request?.headers['proxy-authorization']).toBeUndefined();
    expect(request?.headers.host).toBe(`127.0.0.1:${server.port}`);
  });
});

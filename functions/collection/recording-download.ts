import { createHash } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { RECORDING_UPLOAD_PART_BYTES, RECORDING_UPLOAD_QUEUE_SIZE } from '#shared/limits.ts';
import { AddressRefusedError, pinnedLookup, resolvePublicAddresses } from '#shared/network/pinned-fetch.ts';
import { bareHost, recordingUrlProblem } from '#shared/network/public-url.ts';

/** A recording link that could not be fetched; `reason` is short enough to show the sender. */
export class RecordingDownloadError extends Error {
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Recording download failed: ${reason}`, options);
    this.name = 'RecordingDownloadError';
  }
}

export interface DownloadOptions {
  /** Test-only: lets https links on 127.0.0.0/8, `localhost` and [::1] through (still https only). */
  allowLoopback: boolean;
  /** Whole transfer deadline (connect + headers + body); production passes 120_000. */
  timeoutMs: number;
  /** DNS lookup, injectable for tests; default node:dns/promises lookup(host, {all: true}). */
  lookup?: (host: string) => Promise<{ address: string; family: number }[]>;
}

/** What a sink may use besides the body: the sender's content type, and a signal that fires when the download fails. */
export interface SinkContext {
  contentType?: string;
  signal: AbortSignal;
}

/** Consumes the body; a sink that only takes `body` fits too. */
export type RecordingSink = (body: Readable, context: SinkContext) => Promise<void>;

interface Target {
  /** WHATWG host name, brackets stripped from IPv6 literals: what TLS checks the certificate against. */
  host: string;
  port: number;
  /** Path and query as sent: signed links (S3, CDNs) break when a parser normalises them. */
  path: string;
}

/**
 * Streams the body into `sink` (never buffering the whole file) and answers its byte count and SHA-256 (hex).
 * The host is resolved once and the connection pinned to the checked addresses, so a second DNS answer
 * (rebinding) cannot redirect it. The sink's own failures are rethrown as they are: they are not the link's fault.
 */
export async function downloadRecording(
  url: string,
  sink: RecordingSink,
  options: DownloadOptions,
): Promise<{ bytes: number; sha256: string }> {
  const target = checkedTarget(url, options.allowLoopback);
  const deadline = startDeadline(options.timeoutMs);
  try {
    const addresses = await deadline.race(resolveChecked(target.host, options));
    const response = await deadline.race(requestPinned(target, addresses, deadline.signal));
    return await streamInto(response, sink, deadline);
  } catch (error) {
    throw deadline.failWith(error);
  } finally {
    deadline.stop();
  }
}

/** A sink that streams into S3 with a multipart upload; S3 sees the sender's content type when it gave one. */
export function s3RecordingSink(s3: S3Client, bucket: string, key: string): RecordingSink {
  return async (body, context) => {
    const upload = new Upload({
      client: s3,
      params: { Bucket: bucket, Key: key, Body: body, ...(context.contentType ? { ContentType: context.contentType } : {}) },
      queueSize: RECORDING_UPLOAD_QUEUE_SIZE,
      partSize: RECORDING_UPLOAD_PART_BYTES,
    });
    // Without this the upload would wait for a part that never comes; abort() also drops the parts sent so far.
    const abort = () => void upload.abort();
    context.signal.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
    } finally {
      context.signal.removeEventListener('abort', abort);
    }
  };
}

function checkedTarget(rawUrl: string, allowLoopback: boolean): Target {
  // The text check comes before the loopback allowance: `https://127.0.0.1\@evil.com/` is loopback only to WHATWG parsers.
  const problem = recordingUrlProblem(rawUrl, { allowLoopback });
  if (problem) throw new RecordingDownloadError(problem);
  const parsed = new URL(rawUrl);
  return { host: bareHost(parsed.hostname), port: parsed.port ? Number(parsed.port) : 443, path: rawPathAndQuery(rawUrl) };
}

/** The request target exactly as written; only characters HTTP cannot carry raw (non-ASCII) are percent-encoded. */
function rawPathAndQuery(rawUrl: string): string {
  const afterAuthority = rawUrl.replace(/^https?:\/\/[^/?#]*/i, '').replace(/#.*$/s, '');
  const target = afterAuthority.startsWith('/') ? afterAuthority : `/${afterAuthority}`;
  try {
    return target.replace(/[^\x21-\x7e]/gu, (character) => encodeURIComponent(character));
  } catch (error) {
    throw new RecordingDownloadError('path is not valid UTF-16 text', { cause: error });
  }
}

async function resolveChecked(host: string, options: DownloadOptions): Promise<LookupAddress[]> {
  try {
    return await resolvePublicAddresses(host, options);
  } catch (error) {
    if (error instanceof AddressRefusedError) throw new RecordingDownloadError(error.reason, { cause: error });
    throw error;
  }
}

/**
 * The connection goes to the host name (so SNI and the certificate check use it) but its lookup answers only the
 * addresses already checked. A fresh agent per request: a pooled socket could have been opened for another answer.
 */
function requestPinned(target: Target, addresses: LookupAddress[], signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      {
        method: 'GET',
        host: target.host,
        port: target.port,
        path: target.path,
        // No Authorization, no cookies; identity encoding so the hash is over the stored bytes.
        headers: { accept: '*/*', 'accept-encoding': 'identity', 'user-agent': 'workflow-ingest-collection/1' },
        agent: false,
        lookup: pinnedLookup(addresses),
      },
      resolve,
    );
    // `on`, not `once`: the socket can still fail after the response started, and an unheard 'error' would crash.
    request.on('error', (error) => reject(asDownloadError(error, 'connection failed')));
    signal.addEventListener('abort', () => request.destroy(signal.reason as Error), { once: true });
    request.end();
  });
}

async function streamInto(response: IncomingMessage, sink: RecordingSink, deadline: Deadline): Promise<{ bytes: number; sha256: string }> {
  const status = response.statusCode ?? 0;
  if (status !== 200) {
    response.destroy();
    throw new RecordingDownloadError(REDIRECTS.has(status) ? `redirect (${status}) not followed` : `HTTP ${status}`);
  }
  const meter = new HashMeter();
  const contentType = response.headers['content-type'];
  const transfer = pipeline(response, meter, { signal: deadline.signal }).catch((error: unknown) =>
    deadline.fail(asDownloadError(error, 'transfer broke off')),
  );
  const storing = sink(meter, { ...(contentType ? { contentType } : {}), signal: deadline.signal }).catch((error: unknown) =>
    deadline.fail(error),
  );
  // Both settle before answering, so a failed download never returns while the sink is still writing.
  await Promise.all([transfer, storing]);
  deadline.throwIfFailed();
  return { bytes: meter.bytes, sha256: meter.sha256() };
}

/** What happens on the sender's side of the transfer (refused, reset, TLS, truncated) is the link's problem. */
/** The statuses that name another location (304 Not Modified does not). */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function asDownloadError(error: unknown, what: string): RecordingDownloadError {
  if (error instanceof RecordingDownloadError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  // Node's HTTP parser names its refusals HPE_*: say what they mean to the sender.
  const detail =
    typeof code === 'string'
      ? code.startsWith('HPE_')
        ? ': the server sent an invalid HTTP response'
        : ` (${code})`
      : error instanceof Error
        ? `: ${error.message}`
        : '';
  return new RecordingDownloadError(`${what}${detail}`, { cause: error });
}

/** Passes the bytes on unchanged; backpressure from the sink reaches the socket, so memory stays flat. */
class HashMeter extends Transform {
  bytes = 0;
  private readonly hash = createHash('sha256');

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    this.hash.update(chunk);
    callback(null, chunk);
  }

  sha256(): string {
    return this.hash.digest('hex');
  }
}

interface Deadline {
  signal: AbortSignal;
  /** Rejects with the failure as soon as the download fails or times out, whatever `work` is doing. */
  race<T>(work: Promise<T>): Promise<T>;
  /** Records the first failure and aborts everything listening to `signal` (socket, pipeline, sink). */
  fail(error: unknown): void;
  throwIfFailed(): void;
  /** The error to throw: the first failure (a timeout wins over the errors it caused), else this one. */
  failWith(error: unknown): unknown;
  stop(): void;
}

function startDeadline(timeoutMs: number): Deadline {
  const controller = new AbortController();
  const { signal } = controller;
  const fail = (error: unknown) => {
    if (!signal.aborted) controller.abort(error);
  };
  const timer = setTimeout(() => fail(new RecordingDownloadError(`timed out after ${timeoutMs / 1000} s`)), timeoutMs);
  return {
    signal,
    fail,
    race: (work) => raceAbort(signal, work),
    throwIfFailed: () => {
      if (signal.aborted) throw signal.reason;
    },
    failWith: (error) => {
      fail(error);
      return signal.reason as unknown;
    },
    stop: () => clearTimeout(timer),
  };
}

function raceAbort<T>(signal: AbortSignal, work: Promise<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    void work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

import { request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { reportViolation } from './answer-violations.ts';
import { answerCheck, expectDocumented } from './openapi.ts';

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

export interface HttpOptions {
  method?: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** The local address to send from (any 127.x.y.z reaches the twin on Linux), so tests can play several client IPs. */
  from?: string;
  /**
   * Why this request is deliberately outside the OpenAPI documents at the gateway (a path or method the API does not
   * have, another stage). Without it, an answer of either API must be one its document describes; with it, the answer
   * must still be a refusal in its API's error shape (test/support/openapi.ts).
   */
  undocumented?: string;
}

/**
 * A plain HTTP request. Every answer from either API is checked against its OpenAPI document (status, required
 * headers, content type, body, each server-sent event): one the document does not describe rejects the promise, and
 * so fails the test awaiting it.
 */
export function http(url: string, options: HttpOptions = {}): Promise<HttpResult> {
  const method = options.method ?? 'GET';
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        localAddress: options.from,
        headers: { 'content-type': 'application/json', ...options.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: any = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON; tests look at text
          }
          const result = { status: res.statusCode ?? 0, headers: res.headers, body, text };
          try {
            expectDocumented({ method, url }, result, options.undocumented);
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
            return;
          }
          resolve(result);
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

export function postJson(url: string, body: unknown, from?: string): Promise<HttpResult> {
  return http(url, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), from });
}

/** A response read as it arrives, for answers whose head comes long before their end (execute's heartbeats). */
export interface OpenResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body so far. */
  body(): string;
  ended(): boolean;
  /** Drops the connection, as a client that goes away. */
  close(): void;
}

/**
 * Sends the request and resolves as soon as the status line and headers arrive, which are checked against the OpenAPI
 * document then (an undocumented head rejects); a body that ends is checked when it ends (a violation fails the test).
 */
export function openResponse(url: string, options: Omit<HttpOptions, 'from'> = {}): Promise<OpenResponse> {
  const method = options.method ?? 'GET';
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { 'content-type': 'application/json', ...options.headers } }, (res) => {
      const head = { status: res.statusCode ?? 0, headers: res.headers };
      let check;
      try {
        check = answerCheck({ method, url }, head, options.undocumented);
      } catch (error) {
        req.destroy();
        reject(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      const chunks: Buffer[] = [];
      let ended = false;
      const text = () => Buffer.concat(chunks).toString('utf8');
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        ended = true;
        try {
          check.body(text());
        } catch (error) {
          reportViolation(error instanceof Error ? error : new Error(String(error)));
        }
      });
      res.on('error', () => undefined);
      resolve({ ...head, body: text, ended: () => ended, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * Sends raw bytes (`head`, then `body`) to the server at `url`'s host and port, and answers the raw answer as it came
 * within `waitMs`: for requests no HTTP client sends (a chunked body past the limit, a body cut short). The answer is
 * parsed and checked against the OpenAPI document of `method url`, as every other answer.
 */
export function rawExchange(url: string, method: string, head: string, body: Buffer | undefined, waitMs: number): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    const done = () => {
      try {
        expectDocumented({ method, url }, parseRawAnswer(answer));
        resolve(answer);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    };
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', done);
    socket.on('close', done);
    socket.on('connect', () => {
      socket.write(head);
      if (body) socket.write(body);
      setTimeout(() => socket.destroy(), waitMs);
    });
    socket.setTimeout(10_000, () => reject(new Error('no answer')));
  });
}

/** An HTTP/1.1 answer read off the wire: its status, headers (lower case) and body (a chunked one decoded). */
function parseRawAnswer(raw: string): { status: number; headers: Record<string, string>; text: string } {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no whole HTTP answer: ${raw.slice(0, 200)}`);
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? Number.NaN);
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  let text = raw.slice(end + 4);
  if (headers['transfer-encoding'] === 'chunked') {
    let decoded = '';
    for (;;) {
      const lineEnd = text.indexOf('\r\n');
      const size = parseInt(text.slice(0, lineEnd), 16);
      if (!(size > 0)) break;
      decoded += text.slice(lineEnd + 2, lineEnd + 2 + size);
      text = text.slice(lineEnd + 2 + size + 2);
    }
    text = decoded;
  } else if (headers['content-length'] !== undefined) {
    text = Buffer.from(text).subarray(0, Number(headers['content-length'])).toString('utf8');
  }
  return { status, headers, text };
}

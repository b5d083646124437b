import { request } from 'node:http';

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

/** Sees every answer `http` receives; what it throws fails the request's promise, and so the test awaiting it. */
export type ResponseObserver = (request: { method: string; url: string }, result: HttpResult) => void;

const observers = new Set<ResponseObserver>();

/** Shows `observer` every answer from now on (this test file's, as each file runs in a process of its own); answers how to stop. */
export function observeResponses(observer: ResponseObserver): () => void {
  observers.add(observer);
  return () => observers.delete(observer);
}

/** Shows an answer received some other way (the typed client's fetch) to the observers; throws what they throw. */
export function showObservers(request: { method: string; url: string }, result: HttpResult): void {
  for (const observer of observers) observer(request, result);
}

/**
 * A plain HTTP request from a chosen local address (any 127.x.y.z reaches the twin on Linux),
 * so tests can play several client IPs.
 */
export function http(
  url: string,
  options: { method?: string; body?: string | Buffer; headers?: Record<string, string>; from?: string } = {},
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
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
            showObservers({ method: options.method ?? 'GET', url }, result);
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

import { request } from 'node:http';
import type { LocalTwin } from '#lib/twin/twin.ts';

/**
 * Bytes on the wire of the published API's streams, as a client counts them (status line, headers and body, from the
 * socket's own byte count), beside what they carry:
 * - a streamed run of about 50 events over about 5 seconds: its bytes against the bytes of its events' own lines
 *   (`id:`, `event:`, `data:` and the blank line) plus the response head;
 * - a silent `/executions/{id}/events` subscription on an execution waiting at its approval, per minute.
 * With the default settings the filler is off and nothing is held, so the stream should be little more than its events.
 */
export interface StreamBytesContext {
  twin: LocalTwin;
  /** A key of the project where `writer` (one scripted llm node streaming its reply) and `gate` (an approval) are published. */
  key: string;
}

export interface StreamBytes {
  run: { events: number; event_bytes: number; head_bytes: number; wire_bytes: number; ratio: number; seconds: number };
  idle: { seconds: number; wire_bytes: number; bytes_per_minute: number };
}

const RUN_TOKENS = 48;
const TOKEN_DELAY_MS = 100;
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 60);

/** One HTTP exchange read to its end (or for `forMs`), counting the socket's bytes and splitting head from body. */
function exchange(url: string, options: { method: string; headers: Record<string, string>; body?: string; forMs?: number }) {
  return new Promise<{ status: number; headBytes: number; wireBytes: number; body: string }>((resolve, reject) => {
    const req = request(url, { method: options.method, headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      const done = () => {
        const body = Buffer.concat(chunks);
        const wireBytes = req.socket?.bytesRead ?? 0;
        resolve({ status: res.statusCode ?? 0, headBytes: wireBytes - body.length, wireBytes, body: body.toString('utf8') });
      };
      if (options.forMs !== undefined) setTimeout(() => (done(), req.destroy()), options.forMs);
      else res.once('end', done);
    });
    req.once('error', reject);
    req.end(options.body);
  });
}

/** The events' own bytes: each `id:`/`event:`/`data:` block and its blank line, not comments. */
function eventBytes(body: string): { events: number; bytes: number } {
  const blocks = body.split('\n\n').filter((block) => block.split('\n').some((line) => line.startsWith('data:')));
  const lines = blocks.map((block) =>
    block
      .split('\n')
      .filter((line) => !line.startsWith(':'))
      .join('\n'),
  );
  return { events: lines.length, bytes: lines.reduce((sum, block) => sum + Buffer.byteLength(block) + 2, 0) };
}

export async function streamBytesBench(context: StreamBytesContext): Promise<StreamBytes> {
  const base = `${context.twin.url}/api/v1/published`;
  const headers = { authorization: `Bearer ${context.key}`, 'content-type': 'application/json' };
  const reply = Array.from({ length: RUN_TOKENS }, (_, index) => `w${index}`).join(' ');
  const body = JSON.stringify({
    user_id: 'bench',
    input: { message: 'go' },
    overrides: { write: { reply, token_delay_ms: TOKEN_DELAY_MS } },
  });
  const started = performance.now();
  const streamed = await exchange(`${base}/workflows/writer/stream`, { method: 'POST', headers, body });
  const seconds = (performance.now() - started) / 1000;
  if (streamed.status !== 200 || !streamed.body.includes('"completed"'))
    throw new Error(`stream-bytes: the streamed run did not complete (${streamed.status})`);
  const carried = eventBytes(streamed.body);
  const run = {
    events: carried.events,
    event_bytes: carried.bytes,
    head_bytes: streamed.headBytes,
    wire_bytes: streamed.wireBytes,
    ratio: streamed.wireBytes / (carried.bytes + streamed.headBytes),
    seconds,
  };

  const waiting = await exchange(`${base}/workflows/gate/execute`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ user_id: 'bench', input: { message: 'wait' } }),
  });
  const executionId = (JSON.parse(waiting.body.trim()) as { execution_id: string }).execution_id;
  const silent = await exchange(`${base}/executions/${executionId}/events`, { method: 'GET', headers, forMs: IDLE_SECONDS * 1000 });
  await exchange(`${base}/executions/${executionId}/reject`, { method: 'POST', headers, body: '{}' });
  const idle = { seconds: IDLE_SECONDS, wire_bytes: silent.wireBytes, bytes_per_minute: (silent.wireBytes / IDLE_SECONDS) * 60 };
  return { run, idle };
}

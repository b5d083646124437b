import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { LocalResponseStream } from '#lib/twin/lambda-streaming.ts';

interface ClientEntry {
  kind: 'head' | 'chunk' | 'end';
  text: string;
}

/**
 * The client's side of a local Lambda response stream, without a socket: what it is sent, in order (the status line
 * with its headers, each body chunk as it goes out, the end), a wait for a text to arrive, and a way to hang up.
 */
export function clientResponse() {
  const log: ClientEntry[] = [];
  const head = { statusCode: 0, headers: {} as Record<string, unknown> };
  const response = Object.assign(new EventEmitter(), {
    headersSent: false,
    writeHead(statusCode: number, headers: Record<string, unknown> = {}) {
      Object.assign(head, { statusCode, headers });
      log.push({ kind: 'head', text: '' });
      this.headersSent = true;
    },
    flushHeaders() {},
    write(chunk: Buffer, done: () => void) {
      log.push({ kind: 'chunk', text: chunk.toString('utf8') });
      response.emit('chunk');
      done();
    },
    end(done: () => void) {
      log.push({ kind: 'end', text: '' });
      done();
    },
    destroy() {},
  });
  const chunks = () => log.filter((entry) => entry.kind === 'chunk').map((entry) => entry.text);
  const body = () => chunks().join('');
  const received = (text: string) =>
    new Promise<void>((found) => {
      const check = () => {
        if (!body().includes(text)) return;
        response.off('chunk', check);
        found();
      };
      response.on('chunk', check);
      check();
    });
  return {
    log,
    head,
    chunks,
    body,
    received,
    hangUp: () => response.emit('close'),
    toClient: new LocalResponseStream(response as unknown as ServerResponse),
  };
}

import { STREAM_FLUSH_PADDING_BYTES } from '../shared/limits.ts';

/**
 * The text/event-stream wire format (WHATWG HTML, server-sent events). `data` is one line of JSON:
 * JSON.stringify escapes CR and LF, the only line breaks of the format.
 */
export function sseEvent(event: { id?: number; event: string; data: unknown }): string {
  const id = event.id === undefined ? '' : `id: ${event.id}\n`;
  return `${id}event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** A comment line: clients ignore it, proxies and API Gateway see bytes flowing. */
export const SSE_HEARTBEAT = ': keep-alive\n\n';

/** Some SSE clients read line by line into a fixed buffer (Go's bufio.Scanner stops at 64 KiB): filler lines stay short. */
const PADDING_LINE_BYTES = 1024;

/** At least `bytes` of comment lines (`:` and spaces): nothing for EventSource, neither an event nor a field. */
export function ssePadding(bytes: number): string {
  const line = (length: number) => `:${' '.repeat(length - 2)}\n`;
  const remainder = bytes % PADDING_LINE_BYTES;
  return line(PADDING_LINE_BYTES).repeat(Math.floor(bytes / PADDING_LINE_BYTES)) + (remainder === 0 ? '' : line(Math.max(2, remainder)));
}

/** Written after the last event of a burst so that Lambda sends the burst on instead of holding it (see limits.ts). */
export const SSE_FLUSH_PADDING = ssePadding(STREAM_FLUSH_PADDING_BYTES);

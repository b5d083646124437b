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

/**
 * An event on its way to a function's worker: its JSON, as Lambda receives it, except that a proxy event's string
 * `body` travels beside the JSON (as `null` inside it) rather than escaped into it. A 436 KB dialog is JSON text:
 * escaping it into the event and measuring the copy cost the twin's thread 1.1 ms a request, parsing it back 0.5 ms
 * on the function's; a string passed as is reaches the worker as it would through JSON, and the limit is still
 * measured on the whole event's JSON.
 */
export interface InvokePayload {
  payload: string;
  body?: string;
}

const NULL_JSON_BYTES = 4;
/** JSON.stringify writes any UTF-16 unit in at most 6 bytes (`\u001f`, a lone surrogate), plus the two quotes. */
const MAX_JSON_BYTES_PER_UNIT = 6;

export function toInvokePayload(event: unknown): InvokePayload {
  const body = (event as { body?: unknown } | null)?.body;
  if (typeof body !== 'string' || Object.getPrototypeOf(event) !== Object.prototype || !Object.hasOwn(event as object, 'body')) {
    return { payload: JSON.stringify(event ?? null) };
  }
  // The spread keeps `body` where it was, so the event's keys keep their order.
  return { payload: JSON.stringify({ ...(event as object), body: null }), body };
}

/** The size Lambda's payload limit is about: the whole event as JSON, body included. */
export function exceedsPayloadBytes({ payload, body }: InvokePayload, limit: number): boolean {
  const rest = Buffer.byteLength(payload);
  if (body === undefined) return rest > limit;
  const withoutBody = rest - NULL_JSON_BYTES;
  // Only a body near the limit is escaped to be measured exactly.
  if (withoutBody + 2 + body.length * MAX_JSON_BYTES_PER_UNIT <= limit) return false;
  return withoutBody + Buffer.byteLength(JSON.stringify(body)) > limit;
}

/** In the worker: the event the handler gets, the same value a JSON round trip of the whole event gives. */
export function eventOf({ payload, body }: InvokePayload): unknown {
  const event = JSON.parse(payload) as unknown;
  if (body !== undefined) (event as { body: string }).body = body;
  return event;
}

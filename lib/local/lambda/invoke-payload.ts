/**
 * An event on its way to a function's worker: its JSON, as Lambda receives it, except that a proxy event's string
 * `body` travels beside the JSON (as `null` inside it) rather than escaped into it. A 436 KB dialog is JSON text:
 * escaping it into the event and measuring the copy cost the twin's thread 1.1 ms a request, parsing it back 0.5 ms
 * on the function's; a string passed as is reaches the worker as it would through JSON, and the limit is still
 * measured on the whole event's JSON. A request body the API server received travels as its bytes (`utf8Body`) and
 * becomes the event's text in the worker, as the Lambda runtime decodes an event in the function's own process: the
 * twin's thread, which serves every request, neither decodes it nor holds it as a string.
 */
export interface InvokePayload {
  payload: string;
  body?: string;
  utf8Body?: Uint8Array;
}

const NULL_JSON_BYTES = 4;
/** JSON.stringify writes any UTF-16 unit in at most 6 bytes (`\u001f`, a lone surrogate), plus the two quotes. */
const MAX_JSON_BYTES_PER_UNIT = 6;

/** `utf8Body`: the bytes of a proxy event's text body, whose `body` is `null` until the worker decodes them. */
export function toInvokePayload(event: unknown, utf8Body?: Uint8Array): InvokePayload {
  if (utf8Body) return { payload: JSON.stringify(event), utf8Body: ownBytes(utf8Body) };
  const body = (event as { body?: unknown } | null)?.body;
  if (typeof body !== 'string' || Object.getPrototypeOf(event) !== Object.prototype || !Object.hasOwn(event as object, 'body')) {
    return { payload: JSON.stringify(event ?? null) };
  }
  // The spread keeps `body` where it was, so the event's keys keep their order.
  return { payload: JSON.stringify({ ...(event as object), body: null }), body };
}

/** The size Lambda's payload limit is about: the whole event as JSON, body included. */
export function exceedsPayloadBytes({ payload, body, utf8Body }: InvokePayload, limit: number): boolean {
  const rest = Buffer.byteLength(payload);
  // At most this many UTF-16 units: a UTF-8 byte decodes to one at most.
  const units = body?.length ?? utf8Body?.byteLength;
  if (units === undefined) return rest > limit;
  const withoutBody = rest - NULL_JSON_BYTES;
  // Only a body near the limit is decoded and escaped to be measured exactly.
  if (withoutBody + 2 + units * MAX_JSON_BYTES_PER_UNIT <= limit) return false;
  return withoutBody + Buffer.byteLength(JSON.stringify(body ?? decodeUtf8(utf8Body!))) > limit;
}

/** In the worker: the event the handler gets, the same value a JSON round trip of the whole event gives. */
export function eventOf({ payload, body, utf8Body }: InvokePayload): unknown {
  const event = JSON.parse(payload) as unknown;
  if (body !== undefined) (event as { body: string }).body = body;
  if (utf8Body) (event as { body: string }).body = decodeUtf8(utf8Body);
  return event;
}

/**
 * A message between threads copies the whole memory behind a view: a small Buffer is a slice of Node's shared pool,
 * whose other bytes (anything the twin's thread handled) must not reach a function. Such a view is copied first.
 */
function ownBytes(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
}

/** As API Gateway hands a text body to a function: bytes that are not UTF-8 become U+FFFD. */
function decodeUtf8(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/**
 * An event on its way to a function's worker: its JSON, as Lambda receives it, except that a request body the API
 * server received travels beside it as its bytes (`utf8Body`, the event's `body` null meanwhile) and becomes the
 * event's text in the worker, as the Lambda runtime decodes an event in the function's own process. A 436 KB dialog
 * escaped into the event's JSON cost the twin's thread, which serves every request, 1.1 ms a request and the
 * function's 0.5 ms to parse back; now that thread neither escapes nor decodes it. The limit is still measured on
 * the whole event's JSON, body included.
 */
export interface InvokePayload {
  payload: string;
  utf8Body?: Uint8Array;
}

const NULL_JSON_BYTES = 4;
/** JSON.stringify writes any UTF-16 unit in at most 6 bytes (`\u001f`, a lone surrogate), plus the two quotes. */
const MAX_JSON_BYTES_PER_UNIT = 6;

/** `utf8Body`: the bytes of a proxy event's text body, whose `body` is `null` until the worker decodes them. */
export function toInvokePayload(event: unknown, utf8Body?: Uint8Array): InvokePayload {
  const payload = JSON.stringify(event ?? null);
  return utf8Body ? { payload, utf8Body: ownBytes(utf8Body) } : { payload };
}

/** The size Lambda's payload limit is about: the whole event as JSON, body included. */
export function exceedsPayloadBytes({ payload, utf8Body }: InvokePayload, limit: number): boolean {
  const rest = Buffer.byteLength(payload);
  if (!utf8Body) return rest > limit;
  const withoutBody = rest - NULL_JSON_BYTES;
  // A UTF-8 byte decodes to one UTF-16 unit at most: only a body near the limit is decoded and escaped to be measured.
  if (withoutBody + 2 + utf8Body.byteLength * MAX_JSON_BYTES_PER_UNIT <= limit) return false;
  return withoutBody + Buffer.byteLength(JSON.stringify(decodeUtf8(utf8Body))) > limit;
}

/** In the worker: the event the handler gets, the same value a JSON round trip of the whole event gives. */
export function eventOf({ payload, utf8Body }: InvokePayload): unknown {
  const event = JSON.parse(payload) as unknown;
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

/**
 * An event on its way to a function's worker: its JSON, as Lambda receives it, except that a request body the API
 * server received travels beside it as its bytes (`body`, the event's `body` null meanwhile) and becomes the event's
 * `body` in the worker, as the Lambda runtime parses an event in the function's own process: base64 where API
 * Gateway's binary media types matched (`isBase64Encoded`), else the text API Gateway decodes. A 436 KB dialog
 * written into the event's JSON cost the twin's thread, which serves every request, 1.1 ms a request and the
 * function's 0.5 ms to parse back; now that thread neither encodes nor parses it. The limit is still measured on
 * the whole event's JSON, body included.
 */
export interface InvokePayload {
  payload: string;
  body?: Uint8Array;
  /** The event says `isBase64Encoded`: the body becomes base64 text, else UTF-8 text. */
  base64?: boolean;
}

const NULL_JSON_BYTES = 4;
/** JSON.stringify writes any UTF-16 unit in at most 6 bytes (`\u001f`, a lone surrogate), plus the two quotes. */
const MAX_JSON_BYTES_PER_UNIT = 6;

/** `body`: the bytes of a proxy event's request body, whose `body` is `null` until the worker puts them there. */
export function toInvokePayload(event: unknown, body?: Uint8Array): InvokePayload {
  const payload = JSON.stringify(event ?? null);
  if (!body) return { payload };
  return { payload, body: ownBytes(body), base64: (event as { isBase64Encoded?: unknown }).isBase64Encoded === true };
}

/** The size Lambda's payload limit is about: the whole event as JSON, body included. */
export function exceedsPayloadBytes({ payload, body, base64 }: InvokePayload, limit: number): boolean {
  const rest = Buffer.byteLength(payload);
  if (!body) return rest > limit;
  const withoutBody = rest - NULL_JSON_BYTES;
  // Base64 needs no escaping in JSON: its length is known from the byte count.
  if (base64) return withoutBody + 2 + base64Length(body.byteLength) > limit;
  // A UTF-8 byte decodes to one UTF-16 unit at most: only a body near the limit is decoded and escaped to be measured.
  if (withoutBody + 2 + body.byteLength * MAX_JSON_BYTES_PER_UNIT <= limit) return false;
  return withoutBody + Buffer.byteLength(JSON.stringify(bodyText(body, false))) > limit;
}

/** In the worker: the event the handler gets, the same value a JSON round trip of the whole event gives. */
export function eventOf({ payload, body, base64 }: InvokePayload): unknown {
  const event = JSON.parse(payload) as unknown;
  if (body) (event as { body: string }).body = bodyText(body, base64 === true);
  return event;
}

const base64Length = (bytes: number) => 4 * Math.ceil(bytes / 3);

/**
 * A message between threads copies the whole memory behind a view: a small Buffer is a slice of Node's shared pool,
 * whose other bytes (anything the twin's thread handled) must not reach a function. Such a view is copied first.
 */
function ownBytes(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
}

/** As API Gateway hands a body to a function: base64, or text in which bytes that are not UTF-8 become U+FFFD. */
function bodyText(bytes: Uint8Array, base64: boolean): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(base64 ? 'base64' : 'utf8');
}

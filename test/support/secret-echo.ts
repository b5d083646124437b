import { MAX_TOOL_RESULT_BYTES } from '#shared/limits.ts';

/**
 * A careless tool's answers: the secrets it was sent in its `x-key` and `x-ctl` headers (and its request URL),
 * echoed back in each form a real server might use. The HTTP echo server and the MCP echo tool answer the same
 * bodies, so one list of cases covers both kinds of tool.
 */
export interface Echo {
  status: number;
  type: 'application/json' | 'text/plain';
  body: string;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const b64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
/** As PHP's json_encode or Python's ensure_ascii write it: `\/`, and anything else not alphanumeric as `\uXXXX`. */
const escapeAll = (text: string) =>
  [...text]
    .map((c) => (/[A-Za-z0-9]/.test(c) ? c : c === '/' ? '\\/' : `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`))
    .join('');
const jsonEscaped = (text: string) => JSON.stringify(text).slice(1, -1);
const json = (value: unknown): Echo => ({ status: 200, type: 'application/json', body: JSON.stringify(value) });
const text = (body: string, status = 200): Echo => ({ status, type: 'text/plain', body });

const ECHOES = {
  json: (key, ctl) => json({ key, ctl }),
  'json-keys': (key, ctl) => json({ [key]: 'as a key', deep: [{ a: { [ctl]: [[key]] } }] }),
  'json-unicode-escapes': (key, ctl) => ({
    status: 200,
    type: 'application/json',
    body: `{"key":"${escapeAll(key)}","ctl":"${escapeAll(ctl)}"}`,
  }),
  text: (key, ctl) => text(`key=${key} ctl=${ctl}`),
  'text-json-escaped': (key, ctl) => text(`not JSON: "${jsonEscaped(key)}" "${jsonEscaped(ctl)}" "${escapeAll(key)}"`),
  'json-in-json': (key, ctl) => json({ inner: JSON.stringify({ key, ctl }) }),
  'uri-component': (key, ctl) => json({ key: encodeURIComponent(key), ctl: encodeURIComponent(ctl) }),
  'form-encoded': (key, ctl) => json({ body: new URLSearchParams({ key, ctl }).toString() }),
  'text-form-encoded': (key, ctl) => text(new URLSearchParams({ key, ctl }).toString()),
  'lowercase-percent': (key, ctl) => text(encodeURIComponent(key + ctl).replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase())),
  'request-url': (_key, _ctl, url) => json({ url }),
  base64: (key, ctl) => json({ key: b64(key), ctl: b64(ctl) }),
  'base64-unpadded': (key, ctl) => json({ key: b64(key).replace(/=+$/, ''), ctl: b64(ctl).replace(/=+$/, '') }),
  base64url: (key, ctl) => json({ key: b64url(key), ctl: b64url(ctl) }),
  'base64url-padded': (key, ctl) => json({ key: b64url(key).padEnd(b64(key).length, '='), ctl: b64url(ctl).padEnd(b64(ctl).length, '=') }),
  'base64-inside': (key) => json({ authorization: `Basic ${b64(`user:${key}`)}`, blob: b64(`ab${key}cd`) }),
  'error-text': (key, ctl) => text(`rejected key ${key} and ${ctl}`, 500),
  'error-json': (key, ctl) => ({ status: 401, type: 'application/json', body: JSON.stringify({ error: 'bad key', key, ctl }) }),
  // The secret starts 5 bytes before the 64 KB cut.
  'over-limit-text': (key) => text(`${'x'.repeat(MAX_TOOL_RESULT_BYTES - 5)}${key}${'y'.repeat(1000)}`),
  // The JSON-escaped secret starts 8 bytes before the cut.
  'over-limit-json': (key) => {
    const head = '{"pad":"';
    const middle = '","key":"';
    const pad = 'x'.repeat(MAX_TOOL_RESULT_BYTES - 8 - head.length - middle.length);
    return { status: 200, type: 'application/json', body: `${head}${pad}${middle}${jsonEscaped(key)}","more":"${'y'.repeat(1000)}"}` };
  },
  // Far over the limit, the secret over and over: masked, the text shrinks to one mark, and a read of it ends inside
  // a secret.
  'over-limit-repeated': (key) => text(key.repeat(Math.ceil((4 * MAX_TOOL_RESULT_BYTES) / key.length))),
} satisfies Record<string, (key: string, ctl: string, url: string) => Echo>;

export type EchoEncoding = keyof typeof ECHOES;
export const ECHO_ENCODINGS = Object.keys(ECHOES) as EchoEncoding[];

export function echoOf(encoding: string, key: string, ctl: string, url: string): Echo {
  const echo = Object.hasOwn(ECHOES, encoding) ? ECHOES[encoding as EchoEncoding] : undefined;
  return echo ? echo(key, ctl, url) : text(`no encoding ${encoding}`, 400);
}

/** Every form the tests look for: the value itself, JSON-escaped (both ways), URL-encoded, base64 (every variant). */
function formsOf(secret: string): string[] {
  const forms = [
    secret,
    jsonEscaped(secret),
    escapeAll(secret),
    encodeURIComponent(secret),
    new URLSearchParams({ k: secret }).toString().slice(2),
    b64(secret),
    b64(secret).replace(/=+$/, ''),
    b64url(secret),
    // A URL's query as the URL parser leaves it, partly encoded.
    new URL(`http://h/?k=${secret}`).search.slice(3),
    // Inside `Basic base64(user:secret)` and base64(ab + secret + cd): the characters that hold only the secret's bits.
    b64(`user:${secret}`).slice(8, -4),
    b64(`ab${secret}cd`).slice(4, -4),
    // What a record holding any of them as JSON text shows.
    JSON.stringify(jsonEscaped(secret)).slice(1, -1),
  ];
  return [...new Set(forms)];
}

/**
 * No form of the secret in `text`, nor the start of one (a cut must not leave half a secret): its first 4 characters
 * raw or JSON-escaped, which none of the echoes hold otherwise.
 */
export function leaksOf(text: string, secret: string): string[] {
  const start = secret.slice(0, 4);
  return [...formsOf(secret), start, jsonEscaped(start), JSON.stringify(jsonEscaped(start)).slice(1, -1)].filter((form) =>
    text.includes(form),
  );
}

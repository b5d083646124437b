import type { ServerResponse } from 'node:http';
import { jsonBody } from './required-permissions.ts';

/**
 * DynamoDB's strings are Unicode in UTF-8 (attribute values, attribute names, map keys, expressions), and half of a
 * surrogate pair on its own has no UTF-8 form. JSON text can still spell one (`"\ud800"`: the AWS SDK writes a lone
 * surrogate of a JavaScript string that way), and the embedded store (dynalite) keeps it as it came, so the front door
 * refuses such a request as DynamoDB refuses a request it cannot take: 400 `ValidationException`, nothing written.
 */
export const NOT_UTF8_MESSAGE =
  'One or more parameter values were invalid: A string contains an unpaired surrogate, which is not valid UTF-8';

/** A `\uD800`-`\uDFFF` escape, in either case: only a body holding one can hold a lone surrogate (the SDK writes a pair as UTF-8). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** Whether any key or string of the request's JSON is not well-formed Unicode; walked without recursion. */
export function holdsLoneSurrogate(body: Buffer): boolean {
  if (!body.includes('\\u') || !SURROGATE_ESCAPE.test(body.toString('latin1'))) return false;
  const pending: unknown[] = [jsonBody(body)];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      if (!value.isWellFormed()) return true;
    } else if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) {
        if (!key.isWellFormed()) return true;
        pending.push(child);
      }
    }
  }
  return false;
}

/** DynamoDB's answer to a request it could not validate: JSON 1.0, the type in the body as its validation layer names it. */
export function refuseNotUtf8(response: ServerResponse): void {
  response.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': 'ValidationException' });
  response.end(JSON.stringify({ __type: 'com.amazon.coral.validate#ValidationException', message: NOT_UTF8_MESSAGE }));
}

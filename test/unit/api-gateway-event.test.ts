import { describe, expect, it } from 'vitest';
import { isBinaryMediaType } from '#lib/twin/api-gateway-event.ts';

describe("API Gateway's binary media types, as the twin matches them", () => {
  it('matches the same type in any case and with parameters, its top-level wildcard, and the wildcard of all', () => {
    expect(isBinaryMediaType('application/json', ['application/json'])).toBe(true);
    expect(isBinaryMediaType('Application/JSON; charset=utf-8', ['application/json'])).toBe(true);
    expect(isBinaryMediaType('image/png', ['image/*'])).toBe(true);
    expect(isBinaryMediaType('text/plain', ['*/*'])).toBe(true);
  });

  it('does not match another type, and takes a request without Content-Type as application/json', () => {
    expect(isBinaryMediaType('text/plain', ['application/json', 'image/*'])).toBe(false);
    expect(isBinaryMediaType('application/jsonx', ['application/json'])).toBe(false);
    expect(isBinaryMediaType(undefined, ['application/json'])).toBe(true);
    expect(isBinaryMediaType('', ['image/*'])).toBe(false);
    expect(isBinaryMediaType(undefined, [])).toBe(false);
  });
});

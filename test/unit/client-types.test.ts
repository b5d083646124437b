import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLIENT_TYPES_FILE, publishedClientTypes } from '../openapi/client-types.ts';

/** lib/client/published-api.d.ts is what openapi-typescript makes of the document the API serves, never older. */
describe('the typed client of the Published Workflow API', () => {
  it('has types generated from the current OpenAPI document (else run npm run client:types)', async () => {
    const fresh = await publishedClientTypes();
    expect(
      readFileSync(CLIENT_TYPES_FILE, 'utf8') === fresh,
      'lib/client/published-api.d.ts differs from a fresh generation: run npm run client:types',
    ).toBe(true);
  });
});

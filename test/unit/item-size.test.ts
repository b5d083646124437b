import { createRequire } from 'node:module';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { expectedPutCost, itemBytes, itemWriteUnits } from '#shared/store/item-size.ts';

/**
 * A webhook request bills its put before sending it, from the item's size: the size must be the store's. dynalite
 * reproduces DynamoDB's sizing (and the twin's consumed capacity comes from it), so the two are compared item by item.
 */
const require = createRequire(import.meta.url);
const dynaliteDb = require('dynalite/db/index.js') as { itemSize(this: void, item: unknown): number };
const dynaliteSize = (item: unknown) => dynaliteDb.itemSize(item);

describe('item size', () => {
  it.each([
    ['small numbers', { a: 1, b: 12, c: 123, d: 1234, e: 100 }],
    ['fractions and signs', { a: 0.05, b: -12.5, c: 0, d: 1_700_000_000 }],
    ['strings, binary, booleans, null', { name: 'hello', body: new Uint8Array(1000), yes: true, none: null }],
    ['lists, maps and sets', { list: [1, 'x', true, null], map: { x: 1, yy: 'z' }, set: new Set(['a', 'bb']) }],
    [
      'an event item',
      {
        source_id: 'src_1',
        external_id: 'call-1',
        event_id: 42,
        metadata_fields: [['topic', 'string']],
        body_gzip: new Uint8Array(700),
        expires_at: 1_800_000_000,
      },
    ],
  ])('matches the store for %s', (_label, item) => {
    expect(itemBytes(item)).toBe(dynaliteSize(marshall(item, { convertClassInstanceToMap: true })));
  });

  it('counts a write unit per KB begun, at least one, and as many KB of storage', () => {
    expect(itemWriteUnits({ a: 1 })).toBe(1);
    expect(itemWriteUnits({ body: new Uint8Array(1024) })).toBe(2);
    // Stored: the item's bytes and DynamoDB's 100 bytes of overhead per item.
    expect(expectedPutCost({ body: new Uint8Array(3000) })).toEqual({ dynamoWriteUnits: 3, storedBytes: 4 + 3000 + 100 });
  });

  it('adds each index entry the item makes: a write unit per KB of its keys and projected attributes, and its bytes stored', () => {
    const table = {
      partitionKey: 'pk',
      sortKey: 'sk',
      indexes: [{ name: 'by_t', partitionKey: 'pk', sortKey: 't', projectedAttributes: ['n'] }],
    };
    const item = { pk: 'p', sk: 's', t: 'x', n: 1, body: new Uint8Array(2000) };
    const entry = { pk: 'p', sk: 's', t: 'x', n: 1 };
    expect(expectedPutCost(item, table)).toEqual({ dynamoWriteUnits: 2 + 1, storedBytes: itemBytes(item) + 100 + itemBytes(entry) + 100 });
    // An item without the index's sort key is in no index entry: only its own write.
    expect(expectedPutCost({ pk: 'p', sk: 's' }, table)).toEqual({
      dynamoWriteUnits: 1,
      storedBytes: itemBytes({ pk: 'p', sk: 's' }) + 100,
    });
  });

  it('measures names and strings in UTF-8 bytes, as DynamoDB does', () => {
    expect(itemBytes({ ключ: 'значение' })).toBe(Buffer.byteLength('ключ') + Buffer.byteLength('значение'));
  });
});

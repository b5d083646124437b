/**
 * The size DynamoDB bills an item by, computed from the document client's values before the write is sent, so a
 * write's units are known in advance (the usage item is written beside it, not after it). The rules are DynamoDB's
 * published ones: names and strings in UTF-8 bytes, binary in bytes, numbers by significant digits, lists and maps
 * 3 bytes plus 1 per element, sets the sum of their members.
 */
import { NumberValueImpl } from '@aws-sdk/util-dynamodb';
import type { CostUnits } from '../metering/cost-meter.ts';
import type { TableShape } from './table-indexes.ts';

/** A write unit covers up to 1 KB of item: what a put may add to storage, at most. */
const WRITE_UNIT_BYTES = 1024;

export function itemBytes(item: object): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    if (value === undefined) continue;
    size += Buffer.byteLength(name, 'utf8') + valueBytes(value);
  }
  return size;
}

/** What one put or full update of `item` is billed: a unit per KB begun, never less than one. */
export function itemWriteUnits(item: object): number {
  return Math.max(1, Math.ceil(itemBytes(item) / WRITE_UNIT_BYTES));
}

/**
 * What DynamoDB stores for each item and each index entry besides its attributes
 * (docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html: "100 bytes of overhead").
 */
const ITEM_OVERHEAD_BYTES = 100;

/**
 * What a new item costs when put into `table`: a write unit per KB begun of the item, and of each index entry it makes
 * (an index whose keys the item has gets its keys and projected attributes); the bytes stored, each with its overhead.
 * clients/dynamodb.ts meters every put by it, and a caller that carries its usage beside a write knows it in advance.
 */
export function putCost(item: object, table?: TableShape): { dynamoWriteUnits: number; storedBytes: number } {
  let dynamoWriteUnits = itemWriteUnits(item);
  let storedBytes = itemBytes(item) + ITEM_OVERHEAD_BYTES;
  for (const entry of indexEntries(item, table)) {
    const bytes = itemBytes(entry);
    dynamoWriteUnits += Math.max(1, Math.ceil(bytes / WRITE_UNIT_BYTES));
    storedBytes += bytes + ITEM_OVERHEAD_BYTES;
  }
  return { dynamoWriteUnits, storedBytes };
}

/** What a put of `item` into `table` will be metered (clients/dynamodb.ts). */
export function expectedPutCost(item: object, table?: TableShape): Partial<CostUnits> {
  return putCost(item, table);
}

function indexEntries(item: object, table: TableShape | undefined): object[] {
  const values = item as Record<string, unknown>;
  const entries: object[] = [];
  for (const index of table?.indexes ?? []) {
    const keys = [index.partitionKey, index.sortKey];
    if (!keys.every((key) => values[key] !== undefined && values[key] !== null)) continue;
    const names = new Set([...keys, table!.partitionKey, ...(table!.sortKey ? [table!.sortKey] : []), ...index.projectedAttributes]);
    entries.push(Object.fromEntries([...names].filter((name) => values[name] !== undefined).map((name) => [name, values[name]])));
  }
  return entries;
}

function valueBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number' || typeof value === 'bigint') return numberBytes(String(value));
  if (value instanceof NumberValueImpl) return numberBytes(value.value);
  if (typeof value === 'boolean' || value === null) return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Set) {
    let size = 0;
    for (const member of value) size += valueBytes(member);
    return size;
  }
  if (Array.isArray(value)) {
    let size = 3;
    for (const element of value) size += 1 + valueBytes(element);
    return size;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, member]) => member !== undefined);
    return 3 + entries.length + itemBytes(Object.fromEntries(entries));
  }
  throw new TypeError(`No DynamoDB size for a ${typeof value}`);
}

/**
 * A number takes a byte per two significant digits plus one, one more for a minus sign, and one more when an even
 * count of digits starts on an even decimal exponent (the pairs then need a pad byte): DynamoDB's sizes, as
 * dynalite reproduces them.
 */
function numberBytes(text: string): number {
  const negative = text.startsWith('-');
  const [mantissa = '0', exponentText = '0'] = text.replace(/^-/, '').toLowerCase().split('e');
  const [whole = '', fraction = ''] = mantissa.split('.');
  const digits = `${whole}${fraction}`;
  const significant = digits.replace(/^0+/, '').replace(/0+$/, '');
  if (significant.length === 0) return 1;
  const leadingZeros = digits.length - digits.replace(/^0+/, '').length;
  const exponent = whole.length - 1 - leadingZeros + Number(exponentText);
  const pad = significant.length % 2 === 0 && exponent % 2 === 0 ? 1 : 0;
  return 1 + Math.ceil(significant.length / 2) + pad + (negative ? 1 : 0);
}

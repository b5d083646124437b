'use strict';
/**
 * What a write to a table with secondary indexes costs on DynamoDB, which dynalite does not say: its ConsumedCapacity
 * counts the table's item only. DynamoDB charges each index the write touches too
 * (docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes): an item
 * that enters an index is one write of its projected size (a unit per KB begun), one that leaves it a write of one
 * unit, one whose index key changes both, and one whose projected attributes change a write of the larger size; a
 * write that leaves the index's entry as it was costs that index nothing. Without this the twin's meter would bill an
 * event's put at one unit where DynamoDB bills two.
 *
 * dynalite builds a write's ConsumedCapacity, then updates the indexes, in the same turn: the capacity it just built
 * is the one this write's index updates add to.
 */
// The module dynalite's actions call through (`db.addConsumedCapacity`, `db.updateIndexes`): patched in place.
const db = require('dynalite/db');

const WRITE_UNIT_BYTES = 1024;
let pending;

const addConsumedCapacity = db.addConsumedCapacity;
db.addConsumedCapacity = function withIndexes(data, isRead, ...items) {
  const capacity = addConsumedCapacity.call(this, data, isRead, ...items);
  pending = isRead ? undefined : capacity;
  return capacity;
};

const updateIndexes = db.updateIndexes;
db.updateIndexes = function countingIndexes(store, table, existingItem, item, cb) {
  const capacity = pending;
  pending = undefined;
  if (capacity) capacity.CapacityUnits += indexWriteUnits(table, existingItem, item);
  return updateIndexes.call(this, store, table, existingItem, item, cb);
};

function indexWriteUnits(table, before, after) {
  const tableKeys = table.KeySchema.map((key) => key.AttributeName);
  let units = 0;
  for (const index of [...(table.GlobalSecondaryIndexes ?? []), ...(table.LocalSecondaryIndexes ?? [])]) {
    const entryBefore = entryOf(index, tableKeys, before);
    const entryAfter = entryOf(index, tableKeys, after);
    if (!entryBefore && !entryAfter) continue;
    if (!entryBefore) units += unitsOf(entryAfter);
    else if (!entryAfter) units += 1;
    else if (db.createIndexKey(entryBefore, table, index.KeySchema) !== db.createIndexKey(entryAfter, table, index.KeySchema)) {
      units += 1 + unitsOf(entryAfter);
    } else if (JSON.stringify(entryBefore) !== JSON.stringify(entryAfter)) {
      units += Math.max(unitsOf(entryBefore), unitsOf(entryAfter));
    }
  }
  return units;
}

/** The item's entry in the index (its projected attributes), or undefined when the item lacks the index's key. */
function entryOf(index, tableKeys, item) {
  if (!item) return undefined;
  const indexKeys = index.KeySchema.map((key) => key.AttributeName);
  if (!indexKeys.every((key) => item[key] != null)) return undefined;
  if (index.Projection.ProjectionType === 'ALL') return item;
  const entry = {};
  for (const name of [...new Set([...indexKeys, ...tableKeys, ...(index.Projection.NonKeyAttributes ?? [])])].sort()) {
    if (item[name] !== undefined) entry[name] = item[name];
  }
  return entry;
}

function unitsOf(entry) {
  return Math.max(1, Math.ceil(db.itemSize(entry) / WRITE_UNIT_BYTES));
}

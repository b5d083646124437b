import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from '../store/conditional-write.ts';
import { recordCost } from '../metering/cost-meter.ts';
import { unmarshall, type NativeAttributeValue } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { putCost } from '../store/item-size.ts';
import { INDEXED_TABLES, type TableShape } from '../store/table-indexes.ts';
import { TABLE_ENV, type TableName } from '../resources.ts';
import { traced } from '../lambda/powertools.ts';
import { hotPathClientConfig, withoutSdkLogging } from './hot-path.ts';
import { metered } from './cost-metering.ts';

/**
 * The DynamoDB document client, created once per process. Locally the SDK's own `AWS_ENDPOINT_URL_DYNAMODB`
 * points it at the embedded store; on AWS it uses the defaults.
 */

const READ_COMMANDS = new Set(['GetItemCommand', 'BatchGetItemCommand', 'QueryCommand', 'ScanCommand']);

interface ConsumedCapacity {
  CapacityUnits?: number;
}

function capacityOf(output: { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }): number {
  const consumed = output.ConsumedCapacity;
  const list = Array.isArray(consumed) ? consumed : consumed ? [consumed] : [];
  return list.reduce((sum, entry) => sum + (entry.CapacityUnits ?? 0), 0);
}

/** Asks every call for its consumed capacity and records it as billed read or write units. */
function meteredDocumentClient(): DynamoDBDocumentClient {
  const client = metered(traced(withoutSdkLogging(new DynamoDBClient(hotPathClientConfig()))), async (call) => {
    call.input.ReturnConsumedCapacity ??= 'TOTAL';
    let result;
    try {
      result = await call.proceed();
    } catch (error) {
      // A failed conditional write is still billed; AWS charges at least one write unit for it.
      if (isConditionFailure(error)) recordCost({ dynamoWriteUnits: 1 });
      throw error;
    }
    const units = capacityOf(result.output);
    if (READ_COMMANDS.has(call.commandName)) recordCost({ dynamoReadUnits: units });
    // Updates of counters add nothing to storage to speak of; a put stores its item and its index entries.
    else recordCost({ dynamoWriteUnits: units, storedBytes: putStoredBytes(call.input) });
    return result;
  });
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}

export const dynamo = /* @__PURE__ */ meteredDocumentClient();

/**
 * The bytes the items a command puts take in storage, index entries included (item-size.ts putCost). An item
 * reaches this step as values (the document client marshals later) or, from a plain client, as attribute values.
 */
function putStoredBytes(input: Record<string, unknown>): number {
  const puts: { table: string; item: Record<string, unknown> }[] = [];
  if (typeof input.TableName === 'string' && input.Item) puts.push({ table: input.TableName, item: input.Item as Record<string, unknown> });
  for (const [table, requests] of Object.entries(
    (input.RequestItems ?? {}) as Record<string, { PutRequest?: { Item: Record<string, unknown> } }[]>,
  )) {
    for (const request of requests) if (request.PutRequest) puts.push({ table, item: request.PutRequest.Item });
  }
  return puts.reduce((sum, put) => sum + putCost(valuesOf(put.item), shapeOf(put.table)).storedBytes, 0);
}

const ATTRIBUTE_VALUE_TYPES = new Set(['S', 'N', 'B', 'SS', 'NS', 'BS', 'M', 'L', 'NULL', 'BOOL']);

function valuesOf(item: Record<string, unknown>): Record<string, NativeAttributeValue> {
  const marshalled = Object.values(item).every((value) => {
    const keys = value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [];
    return keys.length === 1 && ATTRIBUTE_VALUE_TYPES.has(keys[0]!);
  });
  return marshalled
    ? unmarshall(item as Record<string, AttributeValue>, { wrapNumbers: true })
    : (item as Record<string, NativeAttributeValue>);
}

/** The indexes of the table a function knows by its physical name (its TABLE_ENV variable). */
function shapeOf(tableName: string): TableShape | undefined {
  const table = (Object.keys(TABLE_ENV) as TableName[]).find((name) => process.env[TABLE_ENV[name]] === tableName);
  return table ? INDEXED_TABLES[table] : undefined;
}

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from '../store/conditional-write.ts';
import { recordCost } from '../metering/cost-meter.ts';
import { WRITE_UNIT_BYTES } from '../store/item-size.ts';
import { traced } from '../lambda/powertools.ts';
import { hotPathClientConfig, withoutSdkLogging } from './hot-path.ts';
import { metered } from './cost-metering.ts';

/**
 * The DynamoDB document client, created once per process. Locally the SDK's own `AWS_ENDPOINT_URL_DYNAMODB`
 * points it at the embedded store; on AWS it uses the defaults.
 */

const STORING_COMMANDS = new Set(['PutItemCommand', 'PutCommand', 'BatchWriteItemCommand', 'BatchWriteCommand']);
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
    // Updates of counters add nothing to storage to speak of; puts may add up to their units in KB.
    else recordCost({ dynamoWriteUnits: units, storedBytes: STORING_COMMANDS.has(call.commandName) ? units * WRITE_UNIT_BYTES : 0 });
    return result;
  });
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}

export const dynamo = /* @__PURE__ */ meteredDocumentClient();

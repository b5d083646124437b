import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SFNClient } from '@aws-sdk/client-sfn';
import { optionalFlag } from './config.ts';
import { isConditionFailure } from './conditional-write.ts';
import { recordCost } from './cost-meter.ts';

/**
 * SDK clients, created once per process. Where they point is configuration only: on AWS the defaults,
 * locally the SDK's standard `AWS_ENDPOINT_URL_DYNAMODB` / `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL_SFN` variables
 * (plus `S3_FORCE_PATH_STYLE=1`, which S3-compatible stores need).
 */

const READ_COMMANDS = new Set(['GetItemCommand', 'BatchGetItemCommand', 'QueryCommand', 'ScanCommand']);
const S3_READ_COMMANDS = new Set(['GetObjectCommand', 'HeadObjectCommand', 'ListObjectsV2Command']);

interface ConsumedCapacity {
  CapacityUnits?: number;
  ReadCapacityUnits?: number;
  WriteCapacityUnits?: number;
}

function capacityOf(output: { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }): number {
  const consumed = output.ConsumedCapacity;
  const list = Array.isArray(consumed) ? consumed : consumed ? [consumed] : [];
  return list.reduce((sum, entry) => sum + (entry.CapacityUnits ?? 0), 0);
}

const dynamoClient = new DynamoDBClient({});
dynamoClient.middlewareStack.add(
  (next, context) => async (args) => {
    const input = args.input as { ReturnConsumedCapacity?: string };
    input.ReturnConsumedCapacity ??= 'TOTAL';
    let result;
    try {
      result = await next(args);
    } catch (error) {
      // A failed conditional write is still billed; AWS charges at least one write unit for it.
      if (isConditionFailure(error)) recordCost({ dynamoWriteUnits: 1 });
      throw error;
    }
    const units = capacityOf(result.output as never);
    const isRead = READ_COMMANDS.has(context.commandName ?? '');
    recordCost(isRead ? { dynamoReadUnits: units } : { dynamoWriteUnits: units });
    return result;
  },
  { step: 'initialize', name: 'costMeter' },
);

export const dynamo = DynamoDBDocumentClient.from(dynamoClient, {
  marshallOptions: { removeUndefinedValues: true },
});

export const s3 = new S3Client({ forcePathStyle: optionalFlag('S3_FORCE_PATH_STYLE') });
s3.middlewareStack.add(
  (next, context) => async (args) => {
    const isRead = S3_READ_COMMANDS.has(context.commandName ?? '');
    recordCost(isRead ? { s3ReadRequests: 1 } : { s3WriteRequests: 1 });
    return next(args);
  },
  { step: 'initialize', name: 'costMeter' },
);

export const sfn = new SFNClient({});
sfn.middlewareStack.add(
  (next) => async (args) => {
    recordCost({ stepFunctionsRequests: 1 });
    return next(args);
  },
  { step: 'initialize', name: 'costMeter' },
);

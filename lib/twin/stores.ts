import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient, ResourceInUseException, type CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { TABLE_ENV, type TableName } from '#shared/resources.ts';
import { TABLE_DEFINITIONS } from '#lib/cdk/table-definitions.ts';
import { startDynamoProcess } from './dynamo-process.ts';
import { installS3Listing } from './s3-listing.ts';

const require = createRequire(import.meta.url);
type S3rverServer = new (
  options: Record<string, unknown>,
) => {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
};

import { LOCAL_BUCKET, LOCAL_CREDENTIALS, LOCAL_REGION, localTableName } from './local-names.ts';

export { LOCAL_BUCKET, LOCAL_CREDENTIALS, LOCAL_REGION, localTableName };

export interface LocalStores {
  dynamodbEndpoint: string;
  s3Endpoint: string;
  close(): Promise<void>;
}

/** The embedded DynamoDB-compatible server, persisting under `dataDir/dynamodb`, in a process of its own (`pid`). */
export async function startDynamo(dataDir: string, port: number): Promise<{ endpoint: string; pid: number; close(): Promise<void> }> {
  mkdirSync(dataDir, { recursive: true });
  const dynamo = await startDynamoProcess(join(dataDir, 'dynamodb'), port);
  try {
    await ensureTables(dynamo.endpoint);
  } catch (error) {
    await dynamo.close();
    throw error;
  }
  return dynamo;
}

export async function startLocalStores(dataDir: string, ports: { dynamodb: number; s3: number }): Promise<LocalStores> {
  const dynamo = await startDynamo(dataDir, ports.dynamodb);
  const s3Dir = join(dataDir, 's3');
  mkdirSync(s3Dir, { recursive: true });
  const S3rver = require('s3rver') as S3rverServer;
  installS3Listing();
  const s3rver = new S3rver({ address: '127.0.0.1', port: ports.s3, directory: s3Dir, silent: true });
  const s3Address = await s3rver.run();
  const s3Endpoint = `http://127.0.0.1:${s3Address.port}`;
  await ensureBucket(s3Endpoint);
  return {
    dynamodbEndpoint: dynamo.endpoint,
    s3Endpoint,
    async close() {
      await Promise.all([dynamo.close(), s3rver.close()]);
    },
  };
}

function tableInput(table: TableName): CreateTableCommandInput {
  const definition = TABLE_DEFINITIONS[table];
  const keyAttributes = new Set([
    definition.partitionKey,
    ...(definition.sortKey ? [definition.sortKey] : []),
    ...definition.indexes.flatMap((index) => [index.partitionKey, index.sortKey]),
  ]);
  return {
    TableName: localTableName(table),
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...keyAttributes].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
    KeySchema: [
      { AttributeName: definition.partitionKey, KeyType: 'HASH' },
      ...(definition.sortKey ? [{ AttributeName: definition.sortKey, KeyType: 'RANGE' as const }] : []),
    ],
    GlobalSecondaryIndexes:
      definition.indexes.length === 0
        ? undefined
        : definition.indexes.map((index) => ({
            IndexName: index.name,
            KeySchema: [
              { AttributeName: index.partitionKey, KeyType: 'HASH' },
              { AttributeName: index.sortKey, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.projectedAttributes] },
          })),
  };
}

async function ensureTables(endpoint: string): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  try {
    for (const table of Object.keys(TABLE_ENV) as TableName[]) {
      try {
        await client.send(new CreateTableCommand(tableInput(table)));
      } catch (error) {
        if (!(error instanceof ResourceInUseException)) throw error;
      }
    }
  } finally {
    client.destroy();
  }
}

async function ensureBucket(endpoint: string): Promise<void> {
  const client = new S3Client({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, forcePathStyle: true });
  try {
    await client.send(new CreateBucketCommand({ Bucket: LOCAL_BUCKET }));
  } catch (error) {
    const name = (error as Error).name;
    if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
  } finally {
    client.destroy();
  }
}

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startLocalStores, type LocalStores } from '#lib/twin/stores.ts';

/**
 * The embedded stores for one test file (its tables created, in a directory of its own, removed afterwards), and a
 * document client on its DynamoDB: for repository tests that need the store's own conditions and answers.
 */
export function useEmbeddedDynamo(name: string): () => DynamoDBDocumentClient {
  let dataDir: string;
  let stores: LocalStores | undefined;
  let dynamo: DynamoDBDocumentClient | undefined;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), `${name}-`));
    stores = await startLocalStores(dataDir, { dynamodb: 0, s3: 0 });
    dynamo = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: stores.dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
      {
        marshallOptions: { removeUndefinedValues: true },
      },
    );
  });
  afterAll(async () => {
    dynamo?.destroy();
    await stores?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return () => dynamo!;
}

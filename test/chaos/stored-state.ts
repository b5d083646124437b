import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { handoffKey } from '#collection/handoff-store.ts';
import { readLiveTwinFile } from '#lib/twin/twin-file.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/local-names.ts';

/** What the stores hold after the traffic, read with the operator's key (which the twin never injects faults into). */
export interface StoredState {
  /** Inbound events by external_id: every item found for it (more than one is a broken deduplication). */
  events: Map<string, { source_id: string; event_id: number; state: string }[]>;
  /** Executions by user_id (each run of the mix has a user of its own). */
  executions: Map<string, { execution_id: string; status: string }[]>;
  /** The names of every execution the Step Functions stand-in ever started (its journal files). */
  stateMachineExecutions: Set<string>;
  /** Whether the hand-off object of an event (source/event id) is in the bucket. */
  handedOff(sourceId: string, eventId: number): Promise<boolean>;
  close(): void;
}

export async function readStoredState(dataDir: string): Promise<StoredState> {
  const twin = readLiveTwinFile(dataDir);
  if (!twin) throw new Error(`no live twin in ${dataDir}`);
  const dynamo = DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
  );
  const s3 = new S3Client({ endpoint: twin.s3_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, forcePathStyle: true });
  const scan = async (table: string) => {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await dynamo.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
      items.push(...((page.Items ?? []) as Record<string, unknown>[]));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  };
  const events = new Map<string, { source_id: string; event_id: number; state: string }[]>();
  for (const item of await scan(twin.tables.inboundEvents)) {
    const externalId = String(item.external_id);
    events.set(externalId, [
      ...(events.get(externalId) ?? []),
      { source_id: String(item.source_id), event_id: Number(item.event_id), state: String(item.state) },
    ]);
  }
  const executions = new Map<string, { execution_id: string; status: string }[]>();
  for (const item of await scan(twin.tables.executions)) {
    if (!String(item.pk).startsWith('execution#') || typeof item.user_id !== 'string') continue;
    executions.set(item.user_id, [
      ...(executions.get(item.user_id) ?? []),
      { execution_id: String(item.execution_id), status: String(item.status) },
    ]);
  }
  // `<state machine>.<execution name>.json` under step-functions/ (lib/twin/asl/execution-journal.ts), ended ones included.
  const journals = join(dataDir, 'step-functions');
  const stateMachineExecutions = new Set(
    (existsSync(journals) ? readdirSync(journals) : []).flatMap((file) => {
      const parts = /^[^.]+\.([^.]+)\.json$/.exec(file);
      return parts ? [decodeURIComponent(parts[1]!)] : [];
    }),
  );
  return {
    events,
    executions,
    stateMachineExecutions,
    async handedOff(sourceId, eventId) {
      try {
        await s3.send(new HeadObjectCommand({ Bucket: twin.bucket, Key: handoffKey({ source_id: sourceId, event_id: eventId }) }));
        return true;
      } catch {
        return false;
      }
    },
    close() {
      dynamo.destroy();
      s3.destroy();
    },
  };
}

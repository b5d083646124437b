import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { handoffKey, type HandoffAnnouncement } from '#collection/handoff-store.ts';
import { HANDOFF_EVENTS_FILE_NAME } from '#lib/twin/twin.ts';
import { readLiveTwinFile } from '#lib/twin/twin-file.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/local-names.ts';

interface StoredExecution {
  execution_id: string;
  status: string;
  /** `pending`, `delivered` or `abandoned` for an execution with a callback. */
  callback_state?: string;
}

/** One hand-off announcement as appended to the twin's file, with where its line begins (collector.ts's windows). */
export interface StoredAnnouncement {
  byte: number;
  detail: HandoffAnnouncement;
}

/** What the stores hold after the traffic, read with the operator's key (which the twin never injects faults into). */
export interface StoredState {
  /** Inbound events by external_id: every item found for it, under any source. */
  events: Map<string, { source_id: string; event_id: number; state: string }[]>;
  /** Executions by user_id (each run of the mix has a user of its own). */
  executions: Map<string, StoredExecution[]>;
  /** The names of every execution the Step Functions stand-in ever started (its journal files). */
  stateMachineExecutions: Set<string>;
  /** Every hand-off announcement, in the order they were written. */
  announcements: StoredAnnouncement[];
  /** The hand-off object of an event (source/event id): its JSON text, or undefined when there is none. */
  handoff(sourceId: string, eventId: number): Promise<string | undefined>;
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
  const executions = new Map<string, StoredExecution[]>();
  for (const item of await scan(twin.tables.executions)) {
    if (!String(item.pk).startsWith('execution#') || typeof item.user_id !== 'string') continue;
    executions.set(item.user_id, [
      ...(executions.get(item.user_id) ?? []),
      {
        execution_id: String(item.execution_id),
        status: String(item.status),
        ...(typeof item.callback_state === 'string' ? { callback_state: item.callback_state } : {}),
      },
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
    announcements: readAnnouncements(join(dataDir, HANDOFF_EVENTS_FILE_NAME)),
    async handoff(sourceId, eventId) {
      try {
        const object = await s3.send(
          new GetObjectCommand({ Bucket: twin.bucket, Key: handoffKey({ source_id: sourceId, event_id: eventId }) }),
        );
        return await object.Body!.transformToString();
      } catch (error) {
        if ((error as Error).name === 'NoSuchKey') return undefined;
        throw error;
      }
    },
    close() {
      dynamo.destroy();
      s3.destroy();
    },
  };
}

function readAnnouncements(file: string): StoredAnnouncement[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file);
  const announcements: StoredAnnouncement[] = [];
  let byte = 0;
  while (byte < text.length) {
    const end = text.indexOf(0x0a, byte);
    const line = text.subarray(byte, end === -1 ? text.length : end).toString('utf8');
    if (line.trim()) announcements.push({ byte, detail: (JSON.parse(line) as { detail: HandoffAnnouncement }).detail });
    byte = end === -1 ? text.length : end + 1;
  }
  return announcements;
}

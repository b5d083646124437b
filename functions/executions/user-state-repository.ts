import { DeleteCommand, PutCommand, QueryCommand, paginateQuery, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { batchPut } from '#shared/store/batch-put.ts';
import { EXECUTION_VALUE_INLINE_MAX_BYTES } from '#shared/limits.ts';
import { memoryPartitionKey, memorySortKey, threadPartitionKey } from './user-state-keys.ts';
import { executionObjectKey, type ExecutionValues } from './execution-values.ts';
import { ttlSeconds } from '#shared/time.ts';

/**
 * A user's state, in the table deployed as `conversations` (its name kept so existing stacks keep their data): user memory per (project,
 * user_id), one item per key so concurrent runs that set
 * different keys never lose each other's writes; history per (project, user_id, thread_id), one item per turn.
 * Keys are bounded whatever the ids (see user-state-keys.ts). Memory values are JSON text (`value_json`),
 * so any value a caller sends is kept as it is; a turn's text over EXECUTION_VALUE_INLINE_MAX_BYTES is kept in S3
 * under its execution (`executions/<id>/turn-<n>.json`, same retention as the turn) with the key in `text_s3`.
 */
export interface Turn {
  role: 'user' | 'assistant';
  text: string;
  execution_id: string;
  at: string;
}

interface StoredTurn extends Omit<Turn, 'text'> {
  text?: string;
  text_s3?: string;
}

export type UserStateRepository = ReturnType<typeof createUserStateRepository>;

export function createUserStateRepository(client: DynamoDBDocumentClient, tableName: string, values: ExecutionValues) {
  return {
    /** A null-prototype map: memory names are the caller's (`constructor`, `__proto__` included). */
    async readMemory(projectId: string, userId: string): Promise<Record<string, unknown>> {
      const memory = Object.create(null) as Record<string, unknown>;
      const pages = paginateQuery(
        { client },
        {
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': memoryPartitionKey(projectId, userId) },
          ConsistentRead: true,
        },
      );
      for await (const page of pages) {
        for (const item of page.Items ?? []) {
          const name = typeof item.name === 'string' ? item.name : String(item.sk).slice('key#'.length);
          memory[name] = typeof item.value_json === 'string' ? JSON.parse(item.value_json) : item.value;
        }
      }
      return memory;
    },

    /** Callers bound each value to MAX_MEMORY_VALUE_BYTES of JSON, so every item stays far below 400 KB. */
    writeMemory(projectId: string, userId: string, entries: Record<string, unknown>): Promise<void> {
      const pk = memoryPartitionKey(projectId, userId);
      return batchPut(
        client,
        tableName,
        Object.entries(entries).map(([name, value]) => ({ pk, sk: memorySortKey(name), name, value_json: JSON.stringify(value ?? null) })),
      );
    },

    /**
     * The thread's latest `limit` turns of other executions than `execution`'s, oldest first, as the thread stood when the
     * execution started (`startedAt`): an execution started later, or a reply that came after, is not this execution's history.
     */
    async readHistory(
      projectId: string,
      userId: string,
      threadId: string,
      limit: number,
      execution: { executionId: string; startedAt?: string },
    ): Promise<Turn[]> {
      const before = execution.startedAt === undefined ? {} : { ':before': `turn#${execution.startedAt}` };
      const result = await client.send(
        new QueryCommand({
          TableName: tableName,
          // Turns sort by when they were written (`turn#<at>#...`): the execution's own begin at its start.
          KeyConditionExpression: execution.startedAt === undefined ? 'pk = :pk' : 'pk = :pk AND sk < :before',
          ExpressionAttributeValues: { ':pk': threadPartitionKey(projectId, userId, threadId), ...before },
          ScanIndexForward: false,
          ConsistentRead: true,
          // Without a start time (executions from before it was kept) this execution's own turns, the newest, are skipped.
          Limit: execution.startedAt === undefined ? limit * 2 : limit,
        }),
      );
      const turns = ((result.Items ?? []) as StoredTurn[]).filter((turn) => turn.execution_id !== execution.executionId).slice(0, limit);
      const loaded = await Promise.all(
        turns.map(async ({ text, text_s3, role, execution_id, at }) => ({
          role,
          execution_id,
          at,
          text: text_s3 === undefined ? (text ?? '') : String(await values.load({ s3: text_s3 })),
        })),
      );
      return loaded.reverse();
    },

    /** `sequence` orders turns written in the same millisecond by one execution, and names a long turn's object. */
    async appendTurn(
      projectId: string,
      userId: string,
      threadId: string,
      turn: Turn,
      sequence: number,
      expiresAtMs: number,
    ): Promise<void> {
      const { text, ...rest } = turn;
      const stored: StoredTurn =
        Buffer.byteLength(text, 'utf8') <= EXECUTION_VALUE_INLINE_MAX_BYTES
          ? { ...rest, text }
          : { ...rest, text_s3: (await values.store(text, executionObjectKey(turn.execution_id, `turn-${sequence}`))).s3 };
      await client.send(
        new PutCommand({
          TableName: tableName,
          Item: { ...turnKey(projectId, userId, threadId, turn, sequence), ...stored, expires_at: ttlSeconds(expiresAtMs) },
        }),
      );
    },

    /** Takes back a turn of an execution that never started (a long turn's object is left to expire with its execution's). */
    async removeTurn(projectId: string, userId: string, threadId: string, turn: Turn, sequence: number): Promise<void> {
      await client.send(new DeleteCommand({ TableName: tableName, Key: turnKey(projectId, userId, threadId, turn, sequence) }));
    },
  };
}

function turnKey(projectId: string, userId: string, threadId: string, turn: Pick<Turn, 'at' | 'execution_id'>, sequence: number) {
  return {
    pk: threadPartitionKey(projectId, userId, threadId),
    sk: `turn#${turn.at}#${turn.execution_id}#${String(sequence).padStart(6, '0')}`,
  };
}

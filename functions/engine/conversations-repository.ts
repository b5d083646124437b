import { PutCommand, QueryCommand, paginateQuery, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { batchPut } from '../shared/batch-put.ts';

/**
 * Conversations table: user memory per (project, user_id), one item per key so concurrent runs that set
 * different keys never lose each other's writes; history per (project, user_id, thread_id), one item per turn.
 */
export interface Turn {
  role: 'user' | 'assistant';
  text: string;
  execution_id: string;
  at: string;
}

const memoryPk = (projectId: string, userId: string) => `memory#${projectId}#${encodeURIComponent(userId)}`;
const threadPk = (projectId: string, userId: string, threadId: string) =>
  `thread#${projectId}#${encodeURIComponent(userId)}#${encodeURIComponent(threadId)}`;

export type ConversationsRepository = ReturnType<typeof createConversationsRepository>;

export function createConversationsRepository(client: DynamoDBDocumentClient, tableName: string) {
  return {
    async readMemory(projectId: string, userId: string): Promise<Record<string, unknown>> {
      const memory: Record<string, unknown> = {};
      const pages = paginateQuery(
        { client },
        {
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': memoryPk(projectId, userId) },
          ConsistentRead: true,
        },
      );
      for await (const page of pages) {
        for (const item of page.Items ?? []) memory[String(item.sk).slice('key#'.length)] = item.value;
      }
      return memory;
    },

    writeMemory(projectId: string, userId: string, values: Record<string, unknown>): Promise<void> {
      const pk = memoryPk(projectId, userId);
      return batchPut(client, tableName, Object.entries(values).map(([name, value]) => ({ pk, sk: `key#${name}`, value })));
    },

    /** The thread's latest turns, oldest first. */
    async readHistory(projectId: string, userId: string, threadId: string, limit: number): Promise<Turn[]> {
      const result = await client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': threadPk(projectId, userId, threadId) },
          ScanIndexForward: false,
          ConsistentRead: true,
          Limit: limit,
        }),
      );
      return ((result.Items ?? []) as Turn[]).reverse();
    },

    /** `sequence` orders turns written in the same millisecond by one run. */
    async appendTurn(projectId: string, userId: string, threadId: string, turn: Turn, sequence: number, expiresAtMs: number): Promise<void> {
      await client.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            pk: threadPk(projectId, userId, threadId),
            sk: `turn#${turn.at}#${turn.execution_id}#${String(sequence).padStart(6, '0')}`,
            ...turn,
            expires_at: Math.ceil(expiresAtMs / 1000),
          },
        }),
      );
    },
  };
}

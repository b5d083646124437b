import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ifConditionHolds } from '#shared/store/conditional-write.ts';
import { ttlSeconds } from '#shared/time.ts';

/**
 * Collection table: the tasks (`tasks` / `<task_id>`, one partition: the nightly trigger lists them all in one
 * Query) and each run's checkpoint (`runs#<task_id>` / `<run_id>`). A run item is created once with its cutoff;
 * the run moves its cursor forward after each page, so a run started again with the same id resumes there.
 */
export interface CollectionTask {
  task_id: string;
  link_id: string;
  kind: 'periodic' | 'once';
  /** Empty: every channel. */
  channels: string[];
  /** Empty: every direction. */
  directions: string[];
  /** One-off tasks: the period asked for (ISO). */
  from_iso?: string;
  to_iso?: string;
  created_at: string;
  last_run?: RunSummary;
}

export interface RunCounts {
  handed_off: number;
  failed: number;
  filtered: number;
  pending: number;
}

export interface RunSummary extends RunCounts {
  task_id: string;
  run_id: string;
  started_at: string;
  finished_at: string | null;
}

export interface RunCheckpoint extends RunSummary {
  /** Events received at or after this key wait for the next run. */
  cutoff_key: string;
  /** The received key up to which every event was processed; '' before the first page. */
  cursor_key: string;
}

const TASKS = 'tasks';
const runsKey = (taskId: string) => `runs#${taskId}`;

export type CollectionRepository = ReturnType<typeof createCollectionRepository>;

export function createCollectionRepository(client: DynamoDBDocumentClient, tableName: string) {
  return {
    async createTask(task: CollectionTask): Promise<void> {
      await client.send(new PutCommand({ TableName: tableName, Item: { pk: TASKS, sk: task.task_id, ...task }, ConditionExpression: 'attribute_not_exists(pk)' }));
    },

    async getTask(taskId: string): Promise<CollectionTask | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: { pk: TASKS, sk: taskId }, ConsistentRead: true }));
      return result.Item ? strip(result.Item) as unknown as CollectionTask : undefined;
    },

    async listTasks(): Promise<CollectionTask[]> {
      const tasks: CollectionTask[] = [];
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await client.send(
          new QueryCommand({ TableName: tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': TASKS }, ExclusiveStartKey: startKey }),
        );
        tasks.push(...(page.Items ?? []).map((item) => strip(item) as unknown as CollectionTask));
        startKey = page.LastEvaluatedKey;
      } while (startKey);
      return tasks;
    },

    /** The run's checkpoint: created with `fresh` unless the run already exists (a repeated or resumed run). */
    async openRun(fresh: RunCheckpoint, expiresAtMs: number): Promise<RunCheckpoint> {
      const created = await ifConditionHolds(
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: { pk: runsKey(fresh.task_id), sk: fresh.run_id, ...fresh, expires_at: ttlSeconds(expiresAtMs) },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        ),
      );
      if (created) return fresh;
      const result = await client.send(new GetCommand({ TableName: tableName, Key: { pk: runsKey(fresh.task_id), sk: fresh.run_id }, ConsistentRead: true }));
      return strip(result.Item!) as unknown as RunCheckpoint;
    },

    async getRun(taskId: string, runId: string): Promise<RunCheckpoint | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: { pk: runsKey(taskId), sk: runId }, ConsistentRead: true }));
      return result.Item ? (strip(result.Item) as unknown as RunCheckpoint) : undefined;
    },

    /** Moves the cursor and adds the page's counts; `finished_at` ends the run. */
    async saveProgress(run: RunCheckpoint): Promise<void> {
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { pk: runsKey(run.task_id), sk: run.run_id },
          UpdateExpression: 'SET cursor_key = :cursor, handed_off = :handed, failed = :failed, filtered = :filtered, pending = :pending, finished_at = :finished',
          ExpressionAttributeValues: {
            ':cursor': run.cursor_key,
            ':handed': run.handed_off,
            ':failed': run.failed,
            ':filtered': run.filtered,
            ':pending': run.pending,
            ':finished': run.finished_at,
          },
        }),
      );
    },

    async recordLastRun(summary: RunSummary): Promise<void> {
      await client.send(
        new UpdateCommand({ TableName: tableName, Key: { pk: TASKS, sk: summary.task_id }, UpdateExpression: 'SET last_run = :run', ExpressionAttributeValues: { ':run': summary } }),
      );
    },
  };
}

function strip(item: Record<string, unknown>): Record<string, unknown> {
  const { pk: _pk, sk: _sk, expires_at: _expires, ...rest } = item;
  return rest;
}

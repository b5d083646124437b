import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ifConditionHolds } from '#shared/store/conditional-write.ts';
import { ttlSeconds } from '#shared/time.ts';
import { allStoredItems } from '#shared/store/paginate.ts';

/**
 * Collection table: the tasks (`tasks` / `<task_id>`, one partition: the nightly trigger lists them all in one
 * Query) and each sweep's checkpoint (`runs#<task_id>` / `<sweep_id>`). A sweep item is created once with its cutoff;
 * the sweep moves its cursor forward after each page, so a sweep started again with the same id resumes there.
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
  last_sweep?: SweepSummary;
}

interface SweepCounts {
  handed_off: number;
  failed: number;
  filtered: number;
  pending: number;
}

export interface SweepSummary extends SweepCounts {
  task_id: string;
  sweep_id: string;
  started_at: string;
  finished_at: string | null;
}

export interface SweepCheckpoint extends SweepSummary {
  /** Events received at or after this key wait for the next sweep. */
  cutoff_key: string;
  /** The received key up to which every event was processed; '' before the first page. */
  cursor_key: string;
}

const TASKS = 'tasks';
// Stored names from when a sweep was called a run, kept so that tables deployed earlier read the same:
/** Partition of a task's sweep checkpoints: `runs#<task_id>`. */
const SWEEPS_PARTITION_PREFIX = 'runs#';
/** The sweep id, in a checkpoint and in a task's last sweep. */
const STORED_SWEEP_ID = 'run_id';
/** The task's last finished sweep (its summary). */
const STORED_LAST_SWEEP = 'last_run';

const sweepsKey = (taskId: string) => `${SWEEPS_PARTITION_PREFIX}${taskId}`;

type Item = Record<string, unknown>;

/** A sweep (checkpoint or summary) as stored: its id under the stored name. */
function storedSweep<Sweep extends SweepSummary>(sweep: Sweep): Item {
  const { sweep_id: sweepId, ...rest } = sweep;
  return { ...rest, [STORED_SWEEP_ID]: sweepId };
}

function sweepOf<Sweep extends SweepSummary>(item: Item): Sweep {
  const { [STORED_SWEEP_ID]: sweepId, ...rest } = strip(item);
  return { ...rest, sweep_id: sweepId } as Sweep;
}

function storedTask(task: CollectionTask): Item {
  const { last_sweep: lastSweep, ...rest } = task;
  return lastSweep ? { ...rest, [STORED_LAST_SWEEP]: storedSweep(lastSweep) } : rest;
}

function taskOf(item: Item): CollectionTask {
  const { [STORED_LAST_SWEEP]: lastSweep, ...rest } = strip(item);
  const task = rest as unknown as CollectionTask;
  return lastSweep ? { ...task, last_sweep: sweepOf<SweepSummary>(lastSweep as Item) } : task;
}

export type CollectionRepository = ReturnType<typeof createCollectionRepository>;

export function createCollectionRepository(client: DynamoDBDocumentClient, tableName: string) {
  return {
    async createTask(task: CollectionTask): Promise<void> {
      await client.send(
        new PutCommand({
          TableName: tableName,
          Item: { pk: TASKS, sk: task.task_id, ...storedTask(task) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    },

    async getTask(taskId: string): Promise<CollectionTask | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: { pk: TASKS, sk: taskId }, ConsistentRead: true }));
      return result.Item ? taskOf(result.Item) : undefined;
    },

    async listTasks(): Promise<CollectionTask[]> {
      const items = await allStoredItems(client, {
        query: { TableName: tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': TASKS } },
      });
      return items.map(taskOf);
    },

    /** The sweep's checkpoint: created with `fresh` unless the sweep already exists (a repeated or resumed sweep). */
    async openSweep(fresh: SweepCheckpoint, expiresAtMs: number): Promise<SweepCheckpoint> {
      const created = await ifConditionHolds(
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: { pk: sweepsKey(fresh.task_id), sk: fresh.sweep_id, ...storedSweep(fresh), expires_at: ttlSeconds(expiresAtMs) },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        ),
      );
      if (created) return fresh;
      const result = await client.send(
        new GetCommand({ TableName: tableName, Key: { pk: sweepsKey(fresh.task_id), sk: fresh.sweep_id }, ConsistentRead: true }),
      );
      return sweepOf<SweepCheckpoint>(result.Item!);
    },

    async getSweep(taskId: string, sweepId: string): Promise<SweepCheckpoint | undefined> {
      const result = await client.send(
        new GetCommand({ TableName: tableName, Key: { pk: sweepsKey(taskId), sk: sweepId }, ConsistentRead: true }),
      );
      return result.Item ? sweepOf<SweepCheckpoint>(result.Item) : undefined;
    },

    /** Moves the cursor and adds the page's counts; `finished_at` ends the sweep. */
    async saveProgress(sweep: SweepCheckpoint): Promise<void> {
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { pk: sweepsKey(sweep.task_id), sk: sweep.sweep_id },
          UpdateExpression:
            'SET cursor_key = :cursor, handed_off = :handed, failed = :failed, filtered = :filtered, pending = :pending, finished_at ' +
            '= :finished',
          ExpressionAttributeValues: {
            ':cursor': sweep.cursor_key,
            ':handed': sweep.handed_off,
            ':failed': sweep.failed,
            ':filtered': sweep.filtered,
            ':pending': sweep.pending,
            ':finished': sweep.finished_at,
          },
        }),
      );
    },

    async recordLastSweep(summary: SweepSummary): Promise<void> {
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { pk: TASKS, sk: summary.task_id },
          UpdateExpression: 'SET #last = :summary',
          ExpressionAttributeNames: { '#last': STORED_LAST_SWEEP },
          ExpressionAttributeValues: { ':summary': storedSweep(summary) },
        }),
      );
    },
  };
}

function strip(item: Item): Item {
  const { pk: _pk, sk: _sk, expires_at: _expires, ...rest } = item;
  return rest;
}

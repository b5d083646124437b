import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ExecutionContext } from './execution-model.ts';
import { executionObjectKey, type ExecutionValues, type StoredValue } from './execution-values.ts';
import { ttlSeconds } from '#shared/time.ts';

/**
 * What an execution reads between its steps, in the executions table next to the `execution#<id>` status item,
 * so the state machine state stays ids and a cursor:
 * - `run#<id>`: the execution context (ids, input, overrides), written once when the execution starts; read once per step.
 * - `outputs#<id>#<n>`: every node output so far, written when the execution pauses (wait or approval) for the n-th
 *   time, and only if a node ran since the last one; the step after the pause reads it. Runs without pauses
 *   never write one: all their nodes run in one step, outputs in memory.
 * Both are immutable once written, so an eventually consistent read (half the price) that finds the item is
 * right; one that does not yet see it is repeated strongly consistent.
 */
export type NodeOutputs = Record<string, { output: unknown }>;

interface StoredItem extends StoredValue {
  pk: string;
  expires_at: number;
}

export type ContextStore = ReturnType<typeof createContextStore>;

export function createContextStore(client: DynamoDBDocumentClient, tableName: string, values: ExecutionValues) {
  const put = async (pk: string, value: unknown, objectName: string, executionId: string, expiresAt: number) => {
    const stored = await values.store(value, executionObjectKey(executionId, objectName));
    const item: StoredItem = { pk, ...stored, expires_at: expiresAt };
    await client.send(new PutCommand({ TableName: tableName, Item: item }));
  };

  const read = async (pk: string): Promise<StoredItem> => {
    for (const consistent of [false, true]) {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: { pk }, ConsistentRead: consistent }));
      if (result.Item) return result.Item as StoredItem;
    }
    throw new Error(`Execution item ${pk} is missing`);
  };

  return {
    /** `expiresAtMs` is the execution's own expiry; the execution's later items take it from here. */
    async createContext(execution: ExecutionContext, expiresAtMs: number): Promise<void> {
      const { execution_id: executionId, ...context } = execution;
      await put(`run#${executionId}`, context, 'context', executionId, ttlSeconds(expiresAtMs));
    },

    async readContext(executionId: string): Promise<ExecutionContext & { expires_at: number }> {
      const item = await read(`run#${executionId}`);
      const context = (await values.load(item)) as Omit<ExecutionContext, 'execution_id'>;
      return { ...context, execution_id: executionId, expires_at: item.expires_at };
    },

    async writeOutputs(executionId: string, version: number, nodes: NodeOutputs, expiresAt: number): Promise<void> {
      await put(`outputs#${executionId}#${version}`, nodes, `outputs-${version}`, executionId, expiresAt);
    },

    async readOutputs(executionId: string, version: number): Promise<NodeOutputs> {
      if (version === 0) return {};
      const item = await read(`outputs#${executionId}#${version}`);
      return (await values.load(item)) as NodeOutputs;
    },
  };
}

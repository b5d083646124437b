import { DeleteCommand, GetCommand, PutCommand, paginateQuery, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { boundedCache } from '#shared/bounded-cache.ts';
import { CACHED_DEFINITION_BYTES, CACHED_PUBLICATIONS, CACHED_WORKFLOWS } from '#shared/limits.ts';
import { batchPut } from '#shared/store/batch-put.ts';
import { storedDefinitionJson, type WorkflowDefinition } from './definition-schema.ts';

/**
 * Publications table. `project#<id>`/`active` names the project's live publication; a publication's
 * `workflow#<id>` items never change once written, so a function instance caches them (the most recently used,
 * within CACHED_WORKFLOWS, CACHED_PUBLICATIONS and CACHED_DEFINITION_BYTES) and only the one small pointer is read per
 * request.
 */
export interface ActivePublication {
  project_id: string;
  publication_id: string;
  published_at: string;
}

export interface PublishedWorkflow {
  publication_id: string;
  definition: WorkflowDefinition;
  created_at: string;
  updated_at: string;
}

/**
 * A workflow item holds its definition as JSON text (`definition_json`), not as a DynamoDB map: the text is
 * exactly what counts against the 400 KB item limit (MAX_DEFINITION_BYTES is checked on it), and the keys
 * operators write (memory names, structured outputs: `constructor`, `toString`, ...) are never marshalled as
 * map keys. Items written before hold a `definition` map and are read as well.
 */
interface WorkflowItem extends Omit<PublishedWorkflow, 'definition'> {
  definition_json?: string;
  definition?: WorkflowDefinition;
}

const fromItem = ({ definition_json, definition, publication_id, created_at, updated_at }: WorkflowItem): PublishedWorkflow => ({
  publication_id,
  created_at,
  updated_at,
  definition: definition_json === undefined ? definition! : (JSON.parse(definition_json) as WorkflowDefinition),
});

const activeKey = (projectId: string) => ({ pk: `project#${projectId}`, sk: 'active' });
const workflowKey = (publicationId: string, workflowId: string) => ({ pk: `publication#${publicationId}`, sk: `workflow#${workflowId}` });

/** What a cached workflow weighs: its definition as stored, the text MAX_DEFINITION_BYTES bounds. */
const storedBytes = (item: WorkflowItem) => Buffer.byteLength(item.definition_json ?? JSON.stringify(item.definition ?? null));

export type PublicationsRepository = ReturnType<typeof createPublicationsRepository>;

export function createPublicationsRepository(client: DynamoDBDocumentClient, tableName: string) {
  const weigh = (cached: { bytes: number }) => cached.bytes;
  const workflowCache = boundedCache<string, { workflow: PublishedWorkflow; bytes: number }>({
    maxEntries: CACHED_WORKFLOWS,
    maxWeight: CACHED_DEFINITION_BYTES,
    weigh,
  });
  const listCache = boundedCache<string, { workflows: PublishedWorkflow[]; bytes: number }>({
    maxEntries: CACHED_PUBLICATIONS,
    maxWeight: CACHED_DEFINITION_BYTES,
    weigh,
  });

  return {
    async getActive(projectId: string): Promise<ActivePublication | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: activeKey(projectId) }));
      return result.Item as ActivePublication | undefined;
    },

    async getWorkflow(publicationId: string, workflowId: string): Promise<PublishedWorkflow | undefined> {
      const cacheKey = `${publicationId}/${workflowId}`;
      const cached = workflowCache.get(cacheKey);
      if (cached) return cached.workflow;
      const result = await client.send(new GetCommand({ TableName: tableName, Key: workflowKey(publicationId, workflowId) }));
      if (!result.Item) return undefined;
      // Only hits are cached: a miss may be a publication still being written.
      const workflow = fromItem(result.Item as WorkflowItem);
      workflowCache.set(cacheKey, { workflow, bytes: storedBytes(result.Item as WorkflowItem) });
      return workflow;
    },

    async listWorkflows(publicationId: string): Promise<PublishedWorkflow[]> {
      const cached = listCache.get(publicationId);
      if (cached) return cached.workflows;
      const workflows: PublishedWorkflow[] = [];
      let bytes = 0;
      const pages = paginateQuery(
        { client },
        {
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :workflow)',
          ExpressionAttributeValues: { ':pk': `publication#${publicationId}`, ':workflow': 'workflow#' },
        },
      );
      for await (const page of pages) {
        for (const item of (page.Items ?? []) as WorkflowItem[]) {
          workflows.push(fromItem(item));
          bytes += storedBytes(item);
        }
      }
      listCache.set(publicationId, { workflows, bytes });
      return workflows;
    },

    /** Writes every workflow first and flips the pointer last, so callers never see half a publication. */
    async publish(active: ActivePublication, workflows: PublishedWorkflow[]): Promise<void> {
      await batchPut(
        client,
        tableName,
        workflows.map(({ definition, ...workflow }) => ({
          ...workflowKey(active.publication_id, definition.id),
          ...workflow,
          definition_json: storedDefinitionJson(definition),
        })),
      );
      await client.send(new PutCommand({ TableName: tableName, Item: { ...activeKey(active.project_id), ...active } }));
    },

    async unpublish(projectId: string): Promise<ActivePublication | undefined> {
      const result = await client.send(new DeleteCommand({ TableName: tableName, Key: activeKey(projectId), ReturnValues: 'ALL_OLD' }));
      return result.Attributes as ActivePublication | undefined;
    },
  };
}

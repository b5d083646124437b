import { DeleteCommand, GetCommand, PutCommand, paginateQuery, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { batchPut } from '#shared/store/batch-put.ts';
import { storedDefinitionJson, type WorkflowDefinition } from './definition-schema.ts';

/**
 * Publications table. `project#<id>`/`active` names the project's live publication; a publication's
 * `workflow#<id>` items never change once written, so a function instance caches them freely and only
 * the one small pointer is read per request.
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

export type PublicationsRepository = ReturnType<typeof createPublicationsRepository>;

export function createPublicationsRepository(client: DynamoDBDocumentClient, tableName: string) {
  const workflowCache = new Map<string, PublishedWorkflow | undefined>();
  const listCache = new Map<string, PublishedWorkflow[]>();

  return {
    async getActive(projectId: string): Promise<ActivePublication | undefined> {
      const result = await client.send(new GetCommand({ TableName: tableName, Key: activeKey(projectId) }));
      return result.Item as ActivePublication | undefined;
    },

    async getWorkflow(publicationId: string, workflowId: string): Promise<PublishedWorkflow | undefined> {
      const cacheKey = `${publicationId}/${workflowId}`;
      if (workflowCache.has(cacheKey)) return workflowCache.get(cacheKey);
      const result = await client.send(new GetCommand({ TableName: tableName, Key: workflowKey(publicationId, workflowId) }));
      const workflow = result.Item ? fromItem(result.Item as WorkflowItem) : undefined;
      // Only hits are cached: a miss may be a publication still being written.
      if (workflow) workflowCache.set(cacheKey, workflow);
      return workflow;
    },

    async listWorkflows(publicationId: string): Promise<PublishedWorkflow[]> {
      const cached = listCache.get(publicationId);
      if (cached) return cached;
      const workflows: PublishedWorkflow[] = [];
      const pages = paginateQuery(
        { client },
        {
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :workflow)',
          ExpressionAttributeValues: { ':pk': `publication#${publicationId}`, ':workflow': 'workflow#' },
        },
      );
      for await (const page of pages) workflows.push(...((page.Items ?? []) as WorkflowItem[]).map(fromItem));
      listCache.set(publicationId, workflows);
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

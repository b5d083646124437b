import { BadRequestError, NotFoundError, ValidationError, type FieldIssue } from '#shared/errors.ts';
import { MAX_DEFINITION_BYTES, MAX_WORKFLOWS_PER_PUBLICATION } from '#shared/limits.ts';
import { newId } from '#shared/secrets.ts';
import { storedDefinitionJson, type WorkflowDefinition } from './definition-schema.ts';
import type { PublicationsRepository, PublishedWorkflow } from './publications-repository.ts';

/** Publishing (admin) and reading (API) a project's active publication. */
export interface PublicationDeps {
  publications: PublicationsRepository;
  now: () => number;
}

const KB = 1024;
const grouped = (n: number) => n.toLocaleString('en-US');

/** Measured as stored (compact JSON, UTF-8), which is what counts against DynamoDB's item limit. */
export function definitionSizeProblem(definition: WorkflowDefinition): string | undefined {
  const bytes = Buffer.byteLength(storedDefinitionJson(definition), 'utf8');
  if (bytes <= MAX_DEFINITION_BYTES) return undefined;
  const limit = `${MAX_DEFINITION_BYTES / KB} KB (${grouped(MAX_DEFINITION_BYTES)} bytes)`;
  return `the definition is ${grouped(bytes)} bytes as stored (compact JSON); the limit is ${limit}`;
}

export async function publish(deps: PublicationDeps, projectId: string, definitions: WorkflowDefinition[]) {
  const issues: FieldIssue[] = [];
  if (definitions.length === 0) issues.push({ field: 'workflows', message: 'a publication needs at least one workflow' });
  if (definitions.length > MAX_WORKFLOWS_PER_PUBLICATION) {
    issues.push({ field: 'workflows', message: `at most ${MAX_WORKFLOWS_PER_PUBLICATION} workflows per publication` });
  }
  const seen = new Set<string>();
  for (const definition of definitions) {
    if (seen.has(definition.id)) issues.push({ field: `${definition.id}.id`, message: 'two workflows share this id' });
    seen.add(definition.id);
    const tooLarge = definitionSizeProblem(definition);
    if (tooLarge) issues.push({ field: definition.id, message: tooLarge });
  }
  if (issues.length > 0) throw new ValidationError(issues, 'Invalid publication');

  const now = new Date(deps.now()).toISOString();
  const previous = await deps.publications.getActive(projectId);
  const previousWorkflows = new Map(
    (previous ? await deps.publications.listWorkflows(previous.publication_id) : []).map((workflow) => [workflow.definition.id, workflow]),
  );
  const publicationId = newId('pub_');
  // A workflow keeps its created_at across publications; updated_at moves only when its definition changed.
  const workflows: PublishedWorkflow[] = definitions.map((definition) => {
    const before = previousWorkflows.get(definition.id);
    const unchanged = before && JSON.stringify(before.definition) === JSON.stringify(definition);
    return {
      publication_id: publicationId,
      definition,
      created_at: before?.created_at ?? now,
      updated_at: unchanged ? before.updated_at : now,
    };
  });
  await deps.publications.publish({ project_id: projectId, publication_id: publicationId, published_at: now }, workflows);
  return { project_id: projectId, publication_id: publicationId, workflows: definitions.map((definition) => definition.id) };
}

export async function unpublish(deps: PublicationDeps, projectId: string) {
  const removed = await deps.publications.unpublish(projectId);
  return { project_id: projectId, unpublished_publication_id: removed?.publication_id ?? null, active_publication_id: null };
}

async function activePublication(deps: PublicationDeps, projectId: string) {
  const active = await deps.publications.getActive(projectId);
  if (!active) throw new BadRequestError('The project has no active publication');
  return active;
}

/** The active publication's workflows, sorted by id, as the list route shows them. */
export async function activeWorkflows(deps: PublicationDeps, projectId: string) {
  const active = await activePublication(deps, projectId);
  const workflows = await deps.publications.listWorkflows(active.publication_id);
  return {
    publication_id: active.publication_id,
    workflows: workflows.map(({ definition }) => definition).sort((a, b) => a.id.localeCompare(b.id)),
  };
}

export async function publishedWorkflow(deps: PublicationDeps, projectId: string, workflowId: string): Promise<PublishedWorkflow> {
  const active = await activePublication(deps, projectId);
  const workflow = await deps.publications.getWorkflow(active.publication_id, workflowId);
  if (!workflow) throw new NotFoundError(`Workflow ${workflowId} not found`);
  return workflow;
}

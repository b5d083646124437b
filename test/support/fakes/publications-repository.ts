import type { WorkflowDefinition } from '#workflows/definition-schema.ts';
import type { ActivePublication, PublicationsRepository, PublishedWorkflow } from '#workflows/publications-repository.ts';
import { Faults } from './faults.ts';

/** The publications table in memory: workflows per publication, and each project's active pointer. */
export class InMemoryPublicationsRepository implements PublicationsRepository {
  readonly active = new Map<string, ActivePublication>();
  readonly workflows = new Map<string, Map<string, PublishedWorkflow>>();
  readonly faults = new Faults<keyof PublicationsRepository>();

  async getActive(projectId: string): Promise<ActivePublication | undefined> {
    await this.faults.enter('getActive');
    const active = this.active.get(projectId);
    return active ? { ...active } : undefined;
  }

  async getWorkflow(publicationId: string, workflowId: string): Promise<PublishedWorkflow | undefined> {
    await this.faults.enter('getWorkflow');
    const workflow = this.workflows.get(publicationId)?.get(workflowId);
    return workflow ? structuredClone(workflow) : undefined;
  }

  async listWorkflows(publicationId: string): Promise<PublishedWorkflow[]> {
    await this.faults.enter('listWorkflows');
    return [...(this.workflows.get(publicationId)?.values() ?? [])].map((workflow) => structuredClone(workflow));
  }

  /** Workflows first, the pointer last, as the repository does. */
  async publish(active: ActivePublication, workflows: PublishedWorkflow[]): Promise<void> {
    await this.faults.enter('publish');
    const byId = this.workflows.get(active.publication_id) ?? new Map<string, PublishedWorkflow>();
    for (const workflow of workflows) byId.set(workflow.definition.id, structuredClone(workflow));
    this.workflows.set(active.publication_id, byId);
    this.active.set(active.project_id, { ...active });
  }

  async unpublish(projectId: string): Promise<ActivePublication | undefined> {
    await this.faults.enter('unpublish');
    const removed = this.active.get(projectId);
    this.active.delete(projectId);
    return removed;
  }

  /** Test helper: makes `definitions` the project's active publication. */
  seed(projectId: string, definitions: WorkflowDefinition[], publicationId = `pub_${projectId}`): ActivePublication {
    const at = '2025-01-01T00:00:00.000Z';
    const active = { project_id: projectId, publication_id: publicationId, published_at: at };
    this.workflows.set(
      publicationId,
      new Map(
        definitions.map((definition) => [
          definition.id,
          { publication_id: publicationId, definition: structuredClone(definition), created_at: at, updated_at: at },
        ]),
      ),
    );
    this.active.set(projectId, active);
    return active;
  }
}

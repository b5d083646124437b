import * as z from '#shared/zod.ts';

/**
 * What the Published Workflow API answers about workflows (GET /workflows and /workflows/{id}): the handlers build
 * their answers as these types, and the OpenAPI document (openapi.ts) is generated from the same schemas.
 */

export const workflowSummarySchema = z.object({
  id: z.string().check(z.meta({ examples: ['support-bot'] })),
  name: z.string(),
  description: z.string().check(z.meta({ description: 'Empty when the definition has none' })),
});

export const workflowListSchema = z.object({
  workflows: z.array(workflowSummarySchema).check(z.meta({ description: 'All workflows of the active publication, by id' })),
  publication_id: z.string(),
  project_id: z.string(),
});

const timestamp = z.string().check(z.meta({ format: 'date-time', description: 'ISO 8601 UTC timestamp' }));

export const workflowDetailSchema = z.extend(workflowSummarySchema, { created_at: timestamp, updated_at: timestamp });

export type WorkflowList = z.output<typeof workflowListSchema>;
export type WorkflowDetail = z.output<typeof workflowDetailSchema>;

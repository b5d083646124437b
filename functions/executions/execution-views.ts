import { sameShape, type Same } from '#shared/same-shape.ts';
import * as z from '#shared/zod.ts';
import type { executionView } from './execution-model.ts';
import type { decideApproval, stopExecution } from './execution-control.ts';

/**
 * What the Published Workflow API answers about executions (the status record; execute, stop, approve, reject), as
 * zod schemas: the OpenAPI document is generated from them (published/openapi.ts) and the e2e tests check every
 * answer against it. The views themselves are built in execution-model.ts and execution-control.ts; the checks at the
 * end of this file fail compilation when a view and its schema stop matching, in either direction.
 */

const count = z.int().check(z.minimum(0));
const timestamp = z
  .string()
  .check(z.meta({ format: 'date-time', description: 'ISO 8601 UTC timestamp', examples: ['2026-05-01T09:30:00.000Z'] }));

export const executionStatusSchema = z
  .enum(['queued', 'running', 'completed', 'failed', 'interrupted', 'cancelled'])
  .check(z.meta({ description: 'queued, running; interrupted while an approval is awaited; completed, failed and cancelled are final' }));

export const pendingApprovalSchema = z.object({
  approval_id: z.string(),
  message: z.string().check(z.meta({ description: 'The prompt for the approver' })),
  node_id: z.string().check(z.meta({ description: 'The node awaiting approval' })),
});

export const executionUsageSchema = z
  .object({
    model_calls: count,
    input_tokens: count,
    output_tokens: count,
    tool_calls: count,
    images: count,
  })
  .check(z.meta({ description: 'What the execution spent on models and tools so far' }));

/** Whatever the execution's end node produced: text, or any JSON value. */
const output = z.unknown().check(z.meta({ description: 'The answer text or structured data; null until the execution has completed' }));

export const executionViewSchema = z.object({
  execution_id: z.string(),
  thread_id: z.string().check(z.meta({ description: 'Generated when the request named none' })),
  workflow_id: z.string(),
  status: executionStatusSchema,
  output,
  error: z.nullable(z.string()).check(z.meta({ description: 'Why the execution failed; null unless status is failed' })),
  elapsed_time: z.number().check(z.minimum(0), z.meta({ description: 'Seconds from creation to finish (to now while not finished)' })),
  total_steps: count.check(z.meta({ description: 'Executed nodes; an approval counts once, when reached' })),
  created_at: timestamp,
  finished_at: z.nullable(timestamp),
  pending_approval: z
    .nullable(pendingApprovalSchema)
    .check(z.meta({ description: 'The approval awaited while status is interrupted; null otherwise' })),
  usage: executionUsageSchema,
});

export const executeResponseSchema = z.extend(executionViewSchema, {
  poll_url: z.optional(
    z
      .string()
      .check(
        z.meta({ description: 'Present only when the execution outlived the blocking wait (status running or queued): where to poll it' }),
      ),
  ),
});

export const stopResponseSchema = z.object({ execution_id: z.string(), status: z.literal('cancelled') });

export const decisionResponseSchema = z.object({
  execution_id: z.string(),
  approval_id: z.string(),
  decision: z.enum(['approved', 'rejected']),
  status: z.literal('running'),
});

// `output` is any JSON value on both sides (zod calls a key that may hold undefined optional; the view always sends it).
sameShape<Same<Omit<ReturnType<typeof executionView>, 'output'>, Omit<z.output<typeof executionViewSchema>, 'output'>>>();
sameShape<Same<Awaited<ReturnType<typeof stopExecution>>, z.output<typeof stopResponseSchema>>>();
sameShape<Same<Awaited<ReturnType<typeof decideApproval>>, z.output<typeof decisionResponseSchema>>>();

import { MAX_IMAGE_SIDE, MIN_IMAGE_SIDE } from '#shared/limits.ts';
import { sameShape, type Same } from '#shared/same-shape.ts';
import * as z from '#shared/zod.ts';
import { executionStatusSchema, pendingApprovalSchema, executionUsageSchema } from './execution-views.ts';
import type { CompleteData } from './stream-events.ts';

/**
 * The `data` of each server-sent event the Published Workflow API streams (README, Streaming), as zod schemas for
 * the OpenAPI document (published/openapi.ts). The events are written by the execution's own path (stream-events.ts, the
 * engine's step and agent runners, event-stream-response.ts), which build them as plain objects: these schemas are
 * checked against what the e2e tests receive, and `complete`'s against CompleteData at compile time.
 */

const nodeId = z.string().check(z.meta({ description: 'The workflow node the event comes from' }));

export const startDataSchema = z.object({ execution_id: z.string(), thread_id: z.string(), workflow_id: z.string() });

export const tokenDataSchema = z.object({
  content: z.string().check(z.meta({ description: "A fragment of text; one node's fragments, concatenated, are its output" })),
  node_id: nodeId,
});

export const toolCallDataSchema = z.object({
  node_id: nodeId,
  call_id: z.string(),
  tool: z.string(),
  status: z.enum(['started', 'succeeded', 'failed']),
  arguments: z.optional(z.unknown().check(z.meta({ description: 'With started: the arguments the model chose' }))),
  duration_ms: z.optional(z.int().check(z.minimum(0), z.meta({ description: 'With succeeded and failed' }))),
  result: z.optional(z.unknown().check(z.meta({ description: "With succeeded: the tool's result, cut to 2 KB of JSON text when longer" }))),
  result_truncated: z.optional(z.literal(true)),
  error: z.optional(z.string().check(z.meta({ description: 'With failed' }))),
});

export const agentHandoffDataSchema = z.object({ from: z.string(), to: z.string() });

export const nodeUpdateDataSchema = z.object({
  node_id: nodeId,
  type: z.string().check(z.meta({ description: "The node's type (llm, agent, condition, wait, approval, ...)" })),
  status: z.enum(['started', 'completed', 'waiting', 'approved', 'rejected']),
  next: z.optional(z.string().check(z.meta({ description: 'A completed condition: the node it chose' }))),
  seconds: z.optional(z.number().check(z.meta({ description: 'A waiting wait node: how long' }))),
  approval_id: z.optional(z.string().check(z.meta({ description: 'An approval waiting, approved or rejected' }))),
  feedback: z.optional(z.string().check(z.meta({ description: "An approval approved or rejected: the approver's comment" }))),
});

/** As the image node allows them (definition-schema.ts); Nova Canvas's own rules narrow them for provider bedrock. */
const imageSide = z.int().check(z.minimum(MIN_IMAGE_SIDE), z.maximum(MAX_IMAGE_SIDE));

export const imageDataSchema = z.object({
  node_id: nodeId,
  key: z.string(),
  url: z.string().check(z.meta({ description: 'A presigned GET URL, valid for an hour' })),
  mime_type: z.literal('image/png'),
  width: imageSide,
  height: imageSide,
});

export const errorDataSchema = z.object({ message: z.string().check(z.meta({ description: "The same text as the execution's error" })) });

export const completeDataSchema = z.object({
  output: z.unknown().check(z.meta({ description: 'The answer text or structured data; null unless completed' })),
  execution_id: z.string(),
  status: executionStatusSchema,
  error: z.optional(z.string().check(z.meta({ description: 'With failed' }))),
  pending_approval: z.optional(pendingApprovalSchema.check(z.meta({ description: 'With interrupted: the stream ends at the approval' }))),
  usage: executionUsageSchema,
});

export const resumeDataSchema = z.object({
  last_event_id: z.int().check(z.minimum(0)),
  resume_url: z.string().check(z.meta({ description: 'Continues exactly after the last event sent (stage path included)' })),
  reason: z.enum(['time_limit', 'unavailable', 'slow_reader']).check(
    z.meta({
      description:
        "time_limit: the stream's window is up (5 minutes unless the deployment sets another, at most 14); unavailable: the log " +
        'could not be read; slow_reader: the client took nothing for 30 s while events waited',
    }),
  ),
});

/** `/executions/{id}/events`: the execution's state, at subscription and at each change. */
export const lifecycleStatusDataSchema = z.object({
  execution_id: z.string(),
  workflow_id: z.nullable(z.string()),
  thread_id: z.nullable(z.string()),
  status: executionStatusSchema,
  output: z.unknown(),
  error: z.nullable(z.string()),
  pending_approval: z.nullable(pendingApprovalSchema),
});

export const lifecycleDecisionDataSchema = z.object({
  execution_id: z.string(),
  approval_id: z.string(),
  node_id: z.string(),
  decision: z.enum(['approved', 'rejected']),
  feedback: z.string(),
  status: z.literal('running'),
});

sameShape<Same<Omit<CompleteData, 'output' | 'status'>, Omit<z.output<typeof completeDataSchema>, 'output' | 'status'>>>();

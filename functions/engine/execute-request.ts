import { z } from 'zod';
import { MAX_CALLER_ID_LENGTH, MAX_FEEDBACK_LENGTH } from '../shared/limits.ts';

/**
 * Body of POST /workflows/{id}/execute (and /stream), spec section 4. Strict types, no coercion;
 * unknown fields are ignored so callers can send what other clients of this API send.
 */
const callerId = z.string().min(1).max(MAX_CALLER_ID_LENGTH);

export const executeRequestSchema = z
  .object({
    input: z
      .record(z.string(), z.unknown())
      .refine((input) => input.message === undefined || typeof input.message === 'string', {
        message: 'message must be a string',
        path: ['message'],
      })
      .default({}),
    user_id: callerId,
    thread_id: callerId.optional(),
    initial_memory: z.record(z.string().min(1).max(128), z.unknown()).optional(),
    callback_url: z.string().min(1).optional(),
    webhook_secret: z.string().min(1).max(1024).optional(),
    overrides: z.record(z.string(), z.record(z.string(), z.unknown())).default({}),
  })
  .refine((body) => body.webhook_secret === undefined || body.callback_url !== undefined, {
    message: 'webhook_secret needs a callback_url',
    path: ['webhook_secret'],
  });

export type ExecuteRequest = z.infer<typeof executeRequestSchema>;

export const decisionRequestSchema = z.object({ feedback: z.string().max(MAX_FEEDBACK_LENGTH).default('') });

import { callerText, wellFormedJson } from '#shared/caller-text.ts';
import { isJsonObject, jsonObjectSchema } from '#shared/json-object.ts';
import { MAX_CALLER_ID_LENGTH, MAX_FEEDBACK_LENGTH } from '#shared/limits.ts';
import * as z from '#shared/zod.ts';
import { memoryKeyProblem } from '#workflows/memory-key.ts';

/**
 * Body of POST /workflows/{id}/execute (and /stream), the OpenAPI document's ExecuteRequest. Strict types, no coercion;
 * unknown fields are ignored so callers can send what other clients of this API send.
 * `input`, `initial_memory` and `overrides` keep every key the caller sent (zod's record would drop
 * `__proto__` silently): their keys are data, and each consumer reads them as own entries only. Every string the body
 * holds, keys at any depth included, is well-formed Unicode (shared/caller-text.ts): it is stored, sent to models and
 * streamed back, where a lone surrogate breaks DynamoDB's keys and strict JSON parsers.
 */

/** A caller's id becomes part of a DynamoDB key (user-state-keys.ts), which must be valid Unicode. */
const callerId = callerText(z.minLength(1), z.maxLength(MAX_CALLER_ID_LENGTH));

const input = jsonObjectSchema.check(
  z.refine((value) => value.message === undefined || typeof value.message === 'string', {
    message: 'message must be a string',
    path: ['message'],
  }),
  wellFormedJson(),
);

/** Each key becomes a sort key (`key#<name>`): bounded in bytes, as DynamoDB counts them. */
const initialMemory = jsonObjectSchema.check(
  z.superRefine((memory, context) => {
    for (const key of Object.keys(memory)) {
      const problem = memoryKeyProblem(key);
      if (problem) context.addIssue({ code: 'custom', path: [key], message: problem });
    }
  }),
  wellFormedJson(),
);

/** Node ids and parameter names are checked against the workflow by applyOverrides, which names each unknown one. */
const overrides = z.custom<Record<string, Record<string, unknown>>>(isJsonObject, { message: 'must be a JSON object' }).check(
  z.superRefine((byNode, context) => {
    for (const [nodeId, params] of Object.entries(byNode)) {
      if (!isJsonObject(params)) context.addIssue({ code: 'custom', path: [nodeId], message: 'must be a JSON object of parameters' });
    }
  }),
  wellFormedJson(),
);

export const executeRequestSchema = z
  .object({
    input: z._default(input, {}),
    user_id: callerId,
    thread_id: z.optional(callerId),
    initial_memory: z.optional(initialMemory),
    callback_url: z.optional(callerText(z.minLength(1))),
    webhook_secret: z.optional(callerText(z.minLength(1), z.maxLength(1024))),
    overrides: z._default(overrides, {}),
  })
  .check(
    z.refine((body) => body.webhook_secret === undefined || body.callback_url !== undefined, {
      message: 'webhook_secret needs a callback_url',
      path: ['webhook_secret'],
    }),
  );

export type ExecuteRequest = z.infer<typeof executeRequestSchema>;

export const decisionRequestSchema = z.object({ feedback: z._default(callerText(z.maxLength(MAX_FEEDBACK_LENGTH)), '') });

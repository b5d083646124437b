import type { FieldIssue } from '#shared/errors.ts';
import { toFieldIssues } from '#shared/field-issues.ts';
import { jsonObjectSchema } from '#shared/json-object.ts';
import {
  AUDIO_FORMAT_PATTERN,
  EXTERNAL_ID_PATTERN,
  MAX_AUDIO_URL_LENGTH,
  MAX_INT32,
  MAX_MESSAGES_PER_DIALOG,
  MAX_SOURCE_CHANNEL_LENGTH,
  MAX_STATUS_LENGTH,
  OCCURRED_AT_MAX_AGE_YEARS,
  OCCURRED_AT_MAX_FUTURE_MS,
} from '#shared/limits.ts';
import * as z from '#shared/zod.ts';

/**
 * The Event of the webhook spec, section 2. zod never coerces, so `"63"` for an integer or `null`
 * for a string is refused; unknown fields are dropped. Dates must carry an explicit offset.
 */

const ISO_WITH_OFFSET =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2}))$/;

/** Epoch milliseconds of an ISO 8601 timestamp with zone offset, or undefined if it is not one (or not a real date). */
export function parseIsoWithOffset(text: string): number | undefined {
  const match = ISO_WITH_OFFSET.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second = '0', , offsetHours = '0', offsetMinutes = '0'] = match;
  const calendar = new Date(Date.UTC(+year!, +month! - 1, +day!, +hour!, +minute!, +second));
  const isRealDate =
    calendar.getUTCFullYear() === +year! &&
    calendar.getUTCMonth() === +month! - 1 &&
    calendar.getUTCDate() === +day! &&
    +hour! < 24 && +minute! < 60 && +second < 60 && +offsetHours < 24 && +offsetMinutes < 60;
  if (!isRealDate) return undefined;
  const epoch = Date.parse(text);
  return Number.isNaN(epoch) ? undefined : epoch;
}

const timestampWithOffset = z
  .string()
  .check(z.refine((text) => parseIsoWithOffset(text) !== undefined, 'must be an ISO 8601 date-time with a zone offset (+HH:MM or Z)'));

const occurredAt = timestampWithOffset.check(
  z.refine((text) => {
    const epoch = parseIsoWithOffset(text);
    if (epoch === undefined) return true; // reported by the format check
    const now = Date.now();
    const earliest = new Date(now);
    earliest.setUTCFullYear(earliest.getUTCFullYear() - OCCURRED_AT_MAX_AGE_YEARS);
    return epoch >= earliest.getTime() && epoch <= now + OCCURRED_AT_MAX_FUTURE_MS;
  }, 'must be between one year ago and one day ahead'),
);

const int32 = z.number().check(z.int(), z.minimum(0), z.maximum(MAX_INT32));

const baseFields = {
  external_id: z.string().check(z.regex(EXTERNAL_ID_PATTERN, 'must match ^[A-Za-z0-9._:-]{1,255}$')),
  occurred_at: occurredAt,
  source_channel: z.optional(z.string().check(z.maxLength(MAX_SOURCE_CHANNEL_LENGTH))),
  status: z.optional(z.string().check(z.maxLength(MAX_STATUS_LENGTH))),
  /** Kept as parsed: every first-level key counts for the schema, `__proto__` and `constructor` included. */
  metadata: z.optional(jsonObjectSchema),
};

const audioSchema = z.object({
  url: z.string().check(z.maxLength(MAX_AUDIO_URL_LENGTH)),
  format: z.string().check(z.regex(AUDIO_FORMAT_PATTERN, 'must be 1 to 8 lower-case letters or digits')),
  duration_seconds: z.optional(int32),
  channels: z.optional(z.literal([1, 2])),
});

const messageSchema = z.object({
  text: z.string(),
  timestamp: timestampWithOffset,
  author_name: z.string(),
  author_role: z.string(),
  sequence_number: z.optional(int32),
  external_id: z.optional(z.string()),
  author_id: z.optional(z.string()),
});

export const callEventSchema = z.object({ type: z.literal('call'), ...baseFields, audio: audioSchema });
export const textEventSchema = z.object({
  type: z.literal('text'),
  ...baseFields,
  messages: z
    .array(messageSchema)
    .check(
      z.minLength(1, 'must hold at least one message'),
      z.maxLength(MAX_MESSAGES_PER_DIALOG, `must hold at most ${MAX_MESSAGES_PER_DIALOG} messages`),
    ),
});

export type CallEvent = z.infer<typeof callEventSchema>;
export type TextEvent = z.infer<typeof textEventSchema>;
export type InboundEvent = CallEvent | TextEvent;

const typeOnlySchema = z.object({ type: z.enum(['call', 'text']) });

export type ParseResult = { ok: true; event: InboundEvent } | { ok: false; issues: FieldIssue[] };

export function parseInboundEvent(body: unknown): ParseResult {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, issues: [{ field: 'body', message: 'must be a JSON object' }] };
  }
  const typed = typeOnlySchema.safeParse(body);
  if (!typed.success) return { ok: false, issues: toFieldIssues(typed.error) };
  const schema = typed.data.type === 'call' ? callEventSchema : textEventSchema;
  const parsed = schema.safeParse(body);
  return parsed.success ? { ok: true, event: parsed.data } : { ok: false, issues: toFieldIssues(parsed.error) };
}


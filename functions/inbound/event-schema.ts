import { callerText, wellFormedJson } from '#shared/caller-text.ts';
import type { FieldIssue } from '#shared/errors.ts';
import { toFieldIssues } from '#shared/http/field-issues.ts';
import { jsonObjectSchema, nestsDeeperThan } from '#shared/json-object.ts';
import {
  AUDIO_FORMAT_PATTERN,
  EXTERNAL_ID_PATTERN,
  MAX_AUDIO_URL_LENGTH,
  MAX_INT32,
  MAX_JSON_DEPTH,
  MAX_MESSAGES_PER_DIALOG,
  MAX_SOURCE_CHANNEL_LENGTH,
  MAX_STATUS_LENGTH,
  OCCURRED_AT_MAX_AGE_YEARS,
  OCCURRED_AT_MAX_FUTURE_MS,
} from '#shared/limits.ts';
import * as z from '#shared/zod.ts';
import { acceptedMessages } from './dialog-messages.ts';
import { isIsoWithOffset } from './iso-timestamp.ts';

/**
 * The webhook API's Event (the OpenAPI document's `Event` is generated from these schemas). zod never coerces, so
 * `"63"` for an integer or `null` for a string is refused; unknown fields are dropped. Dates must carry an explicit
 * offset. Every string the event holds, metadata's keys included, must be well-formed Unicode (shared/caller-text.ts):
 * the nightly collection hands the conversation on as JSON to parsers that refuse a lone surrogate.
 */

const timestampWithOffset = z.string().check(
  z.refine(isIsoWithOffset, 'must be an ISO 8601 date-time with a zone offset (+HH:MM or Z)'),
  // What the refinement checks, for the OpenAPI document (a refinement has no JSON Schema of its own).
  z.meta({
    description: 'ISO 8601 date-time of a real calendar day with an explicit zone offset (+HH:MM or Z); seconds and fraction optional',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})$',
    examples: ['2026-05-01T12:30:00+03:00'],
  }),
);

/**
 * A rule on when the event arrives, not on what it holds: checked at acceptance only. A body read again later (the
 * nightly collection) keeps the `occurred_at` that was inside the window when it came.
 */
const occurredWithinWindow = timestampWithOffset.check(
  z.refine((text) => {
    if (!isIsoWithOffset(text)) return true; // reported by the format check
    const epoch = Date.parse(text);
    const now = Date.now();
    const earliest = new Date(now);
    earliest.setUTCFullYear(earliest.getUTCFullYear() - OCCURRED_AT_MAX_AGE_YEARS);
    return epoch >= earliest.getTime() && epoch <= now + OCCURRED_AT_MAX_FUTURE_MS;
  }, 'must be between one year ago and one day ahead'),
  z.meta({
    description:
      'ISO 8601 date-time of a real calendar day with an explicit zone offset (+HH:MM or Z), from one year before to one day after ' +
      'the time the event arrives',
  }),
);

const int32 = z.number().check(z.int(), z.minimum(0), z.maximum(MAX_INT32));

/**
 * Controls (U+0000-U+001F, U+007F-U+009F) and the bidirectional formatting characters (U+061C, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069): in a value the operator reads in the collection's filter lists (`links filters`),
 * they would cut it short, hide part of it, or show it in another order than it is stored (a disguised value).
 */
const UNSHOWABLE = /[\p{Cc}\p{Bidi_Control}]/u;
const UNSHOWABLE_MESSAGE = 'must not contain control characters or bidirectional formatting characters (it is shown in filter lists)';

/** Text that becomes a filter value: refused on arrival when it could not be shown as it is. */
const showable = z.refine<string>((text) => !UNSHOWABLE.test(text), UNSHOWABLE_MESSAGE);

/** `metadata.direction` feeds the Direction filter (stored-event.ts#directionOf): a string there is held to the same rule. */
const showableDirection = z.refine<Record<string, unknown>>(
  (metadata) => !Object.hasOwn(metadata, 'direction') || typeof metadata.direction !== 'string' || !UNSHOWABLE.test(metadata.direction),
  { message: UNSHOWABLE_MESSAGE, path: ['direction'] },
);

const audioSchema = z.object({
  url: callerText(z.maxLength(MAX_AUDIO_URL_LENGTH)),
  format: z.string().check(z.regex(AUDIO_FORMAT_PATTERN, 'must be 1 to 8 lower-case letters or digits')),
  duration_seconds: z.optional(int32),
  channels: z.optional(z.literal([1, 2])),
});

const messageSchema = z.object({
  text: callerText(),
  timestamp: timestampWithOffset,
  author_name: callerText(),
  author_role: callerText(),
  sequence_number: z.optional(int32),
  external_id: z.optional(callerText()),
  author_id: z.optional(callerText()),
});

/**
 * The rules on when an event arrives rather than on what it holds, checked at acceptance only: a body read again
 * later (the nightly collection) keeps what was accepted when it came.
 */
interface ArrivalRules {
  occurredAt: typeof timestampWithOffset;
  /** Whether filter values (`source_channel`, `metadata.direction`) must be showable. */
  showableFilterValues: boolean;
}

/** The event schemas, the same but for the arrival rules. */
function eventSchemas({ occurredAt, showableFilterValues }: ArrivalRules) {
  const sourceChannel = callerText(z.maxLength(MAX_SOURCE_CHANNEL_LENGTH));
  const baseFields = {
    external_id: z.string().check(z.regex(EXTERNAL_ID_PATTERN, 'must match ^[A-Za-z0-9._:-]{1,255}$')),
    occurred_at: occurredAt,
    source_channel: z.optional(
      showableFilterValues
        ? sourceChannel.check(
            showable,
            z.meta({
              description:
                `Channel or site of origin, at most ${MAX_SOURCE_CHANNEL_LENGTH} characters; feeds the collection's Channel filter, so ` +
                'it holds no control characters and no bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A-U+202E, ' +
                'U+2066-U+2069)',
            }),
          )
        : sourceChannel,
    ),
    status: z.optional(callerText(z.maxLength(MAX_STATUS_LENGTH))),
    /**
     * Kept as parsed: every first-level key counts for the schema, `__proto__` and `constructor` included. Bounded in
     * depth: the collection hands metadata on as JSON, and a value nested thousands deep would overflow the stack there
     * (five failures, then never handed on) after its event was acknowledged.
     */
    metadata: z.optional(
      jsonObjectSchema.check(
        z.refine(
          (metadata) => !nestsDeeperThan(metadata, MAX_JSON_DEPTH),
          `must not nest objects and arrays more than ${MAX_JSON_DEPTH} levels deep`,
        ),
        wellFormedJson(),
        ...(showableFilterValues ? [showableDirection] : []),
        z.meta({
          description:
            `Any JSON object, stored whole (objects and arrays nested at most ${MAX_JSON_DEPTH} levels; every key and string ` +
            `well-formed Unicode); \`direction\` (inbound, outbound, internal) feeds the collection's Direction filter for calls, ` +
            'so a string there holds no control or bidirectional formatting characters',
          examples: [{ direction: 'inbound', operator: 'Anna' }],
        }),
      ),
    ),
  };
  return {
    call: z.object({ type: z.literal('call'), ...baseFields, audio: audioSchema }),
    /** A dialog without its messages: what the schema checks once acceptedMessages has passed them all. */
    textEnvelope: z.object({ type: z.literal('text'), ...baseFields }),
    text: z.object({
      type: z.literal('text'),
      ...baseFields,
      messages: z
        .array(messageSchema)
        .check(
          z.minLength(1, 'must hold at least one message'),
          z.maxLength(MAX_MESSAGES_PER_DIALOG, `must hold at most ${MAX_MESSAGES_PER_DIALOG} messages`),
        ),
    }),
  };
}

type EventSchemas = ReturnType<typeof eventSchemas>;
/** What a request must hold to be accepted now. */
const arriving = eventSchemas({ occurredAt: occurredWithinWindow, showableFilterValues: true });
/** What an accepted body holds, whenever it is read. */
const accepted = eventSchemas({ occurredAt: timestampWithOffset, showableFilterValues: false });

export const callEventSchema = arriving.call;
export const textEventSchema = arriving.text;

export type CallEvent = z.infer<typeof callEventSchema>;
export type TextEvent = z.infer<typeof textEventSchema>;
export type InboundEvent = CallEvent | TextEvent;

const typeOnlySchema = z.object({ type: z.enum(['call', 'text']) });

export type ParseResult = { ok: true; event: InboundEvent } | { ok: false; issues: FieldIssue[] };

/** The event a request's body holds, or why it cannot be accepted now. */
export function parseInboundEvent(body: unknown): ParseResult {
  return parseWith(arriving, body);
}

/**
 * The event a body accepted earlier holds, exactly as parseInboundEvent output it then: the same fields, unknown ones
 * dropped, but no acceptance window on `occurred_at`. The other rules depend on the body alone, so an accepted body
 * passes them again (unless one is tightened while the event is still queued).
 */
export function parseAcceptedBody(body: unknown): ParseResult {
  return parseWith(accepted, body);
}

function parseWith(schemas: EventSchemas, body: unknown): ParseResult {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, issues: [{ field: 'body', message: 'must be a JSON object' }] };
  }
  const typed = typeOnlySchema.safeParse(body);
  if (!typed.success) return { ok: false, issues: toFieldIssues(typed.error) };
  if (typed.data.type === 'text') {
    // With every message valid, the whole schema's issues are the envelope's: the messages add none.
    const messages = acceptedMessages((body as { messages?: unknown }).messages);
    if (messages) {
      const envelope = schemas.textEnvelope.safeParse(body);
      return envelope.success ? { ok: true, event: { ...envelope.data, messages } } : { ok: false, issues: toFieldIssues(envelope.error) };
    }
  }
  const schema = typed.data.type === 'call' ? schemas.call : schemas.text;
  const parsed = schema.safeParse(body);
  return parsed.success ? { ok: true, event: parsed.data } : { ok: false, issues: toFieldIssues(parsed.error) };
}

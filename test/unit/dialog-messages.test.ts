import { describe, expect, it } from 'vitest';
import { acceptedMessages } from '#inbound/dialog-messages.ts';
import { parseInboundEvent, textEventSchema } from '#inbound/event-schema.ts';
import { toFieldIssues } from '#shared/http/field-issues.ts';

const now = () => new Date().toISOString();
const valid = (i = 0) => ({ text: `hi ${i}`, timestamp: now(), author_name: 'Ann', author_role: 'client' });
const dialog = (messages: unknown, overrides: Record<string, unknown> = {}) => ({
  type: 'text',
  external_id: 'chat-1',
  occurred_at: now(),
  messages,
  ...overrides,
});

/** What zod alone answers for the whole dialog: the rule the hand-written check must reproduce. */
function bySchema(body: unknown) {
  const parsed = textEventSchema.safeParse(body);
  return parsed.success ? { ok: true, event: parsed.data } : { ok: false, issues: toFieldIssues(parsed.error) };
}

/** Same outcome, same issues in the same order, same output with its keys in the same order. */
function expectSameAsSchema(body: unknown) {
  const ours = parseInboundEvent(body);
  const schema = bySchema(body);
  expect(ours).toEqual(schema);
  expect(JSON.stringify(ours)).toBe(JSON.stringify(schema));
  // Never accepts messages the schema refuses.
  const messages = (body as { messages?: unknown }).messages;
  if (acceptedMessages(messages) !== undefined) expect(bySchema(dialog(messages)).ok).toBe(true);
  return ours;
}

const badMessages: [string, unknown][] = [
  ['no text', { ...valid(), text: undefined }],
  ['text null', { ...valid(), text: null }],
  ['text a number', { ...valid(), text: 5 }],
  ['no timestamp', (({ timestamp: _, ...rest }) => rest)(valid())],
  ['timestamp without offset', { ...valid(), timestamp: '2026-03-01T10:00:00' }],
  ['timestamp not a date', { ...valid(), timestamp: '2026-02-30T10:00:00Z' }],
  ['timestamp a number', { ...valid(), timestamp: Date.now() }],
  ['no author_name', (({ author_name: _, ...rest }) => rest)(valid())],
  ['author_role an object', { ...valid(), author_role: { name: 'client' } }],
  ['sequence_number a string', { ...valid(), sequence_number: '1' }],
  ['sequence_number negative', { ...valid(), sequence_number: -1 }],
  ['sequence_number fractional', { ...valid(), sequence_number: 1.5 }],
  ['sequence_number past int32', { ...valid(), sequence_number: 2_147_483_648 }],
  ['sequence_number NaN', { ...valid(), sequence_number: Number.NaN }],
  ['external_id a number', { ...valid(), external_id: 7 }],
  ['author_id null', { ...valid(), author_id: null }],
  ['text with a lone surrogate', { ...valid(), text: 'hi \ud800' }],
  ['author_name with a lone surrogate', { ...valid(), author_name: '\udc00' }],
  ['author_role with a lone surrogate', { ...valid(), author_role: 'client\ud83d' }],
  ['external_id with a lone surrogate', { ...valid(), external_id: '\ud800x' }],
  ['author_id with a lone surrogate', { ...valid(), author_id: '\udfff' }],
  ['a string', 'hello'],
  ['null', null],
  ['an array', [valid()]],
  [
    'every field wrong',
    { text: 1, timestamp: 'now', author_name: null, author_role: [], sequence_number: -2, external_id: false, author_id: 0 },
  ],
];

describe('dialog messages checked by hand', () => {
  it('accepts valid messages with the schema output: known fields only, in the schema order', () => {
    const full = { author_id: 'u1', external_id: 'm1', sequence_number: 0, ...valid(), surprise: { deep: true } };
    const result = expectSameAsSchema(
      dialog([valid(), full, { ...valid(), sequence_number: 2_147_483_647 }], { metadata: { topic: 'refund' }, extra: 1 }),
    );
    expect(result.ok && result.event.type === 'text' && Object.keys(result.event.messages[1]!)).toEqual([
      'text',
      'timestamp',
      'author_name',
      'author_role',
      'sequence_number',
      'external_id',
      'author_id',
    ]);
    expect(acceptedMessages([full])).toEqual(
      bySchema(dialog([full])).ok ? (bySchema(dialog([full])) as { event: { messages: unknown } }).event.messages : 'refused',
    );
  });

  it.each(badMessages)('reports a message with %s exactly as the schema does', (_, bad) => {
    const body = dialog([valid(0), bad, valid(2)]);
    expect(acceptedMessages(body.messages)).toBeUndefined();
    const result = expectSameAsSchema(body);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.issues.every((issue) => issue.field.startsWith('messages.1'))).toBe(true);
  });

  it('leaves a key present with the value undefined (never in JSON) to the schema, which accepts it', () => {
    const body = dialog([valid(), { ...valid(), sequence_number: undefined, author_id: undefined }]);
    expect(acceptedMessages(body.messages)).toBeUndefined();
    expect(expectSameAsSchema(body).ok).toBe(true);
  });

  it('pins the wording of the refusals senders meet most', () => {
    expect(parseInboundEvent(dialog([{ ...valid(), timestamp: '2026-03-01T10:00:00' }]))).toEqual({
      ok: false,
      issues: [{ field: 'messages.0.timestamp', message: 'must be an ISO 8601 date-time with a zone offset (+HH:MM or Z)' }],
    });
    expect(parseInboundEvent(dialog([valid(), (({ author_name: _, ...rest }) => rest)(valid())]))).toEqual({
      ok: false,
      issues: [{ field: 'messages.1.author_name', message: 'Invalid input: expected string, received undefined' }],
    });
    expect(parseInboundEvent(dialog(Array.from({ length: 2001 }, (_, i) => valid(i))))).toEqual({
      ok: false,
      issues: [{ field: 'messages', message: 'must hold at most 2000 messages' }],
    });
    expect(parseInboundEvent(dialog([]))).toEqual({
      ok: false,
      issues: [{ field: 'messages', message: 'must hold at least one message' }],
    });
  });

  it('counts messages as the schema does: 1 to 2000, an array only', () => {
    for (const messages of [
      [],
      Array(2000).fill(valid()),
      Array(2001).fill(valid()),
      undefined,
      null,
      {},
      { 0: valid(), length: 1 },
      'messages',
    ]) {
      expectSameAsSchema(dialog(messages));
    }
    expect(acceptedMessages(Array(2000).fill(valid()))).toHaveLength(2000);
    // A hole reads as undefined, which is not a message.
    const holed: unknown[] = new Array(3);
    holed[0] = valid();
    holed[2] = valid();
    expectSameAsSchema(dialog(holed));
  });

  it('reports the envelope as the schema does when the messages are valid, and both when neither is', () => {
    expectSameAsSchema(
      dialog([valid()], { external_id: 'has space', occurred_at: '2020-01-01T00:00:00Z', source_channel: null, metadata: [] }),
    );
    expectSameAsSchema(dialog([valid(), { ...valid(), text: null }], { external_id: 'has space', status: 's'.repeat(33) }));
    expectSameAsSchema(dialog([valid()], { occurred_at: '2026-01-01T10:00:00' }));
  });

  it('keeps what the parsed JSON holds, __proto__ keys included, without copying them into a message', () => {
    const body = JSON.parse(
      `{"type":"text","external_id":"e","occurred_at":"${now()}","metadata":{"__proto__":1},"messages":[{"__proto__":{"text":1},"text":"t","timestamp":"${now()}","author_name":"a","author_role":"r"}]}`,
    ) as unknown;
    const result = expectSameAsSchema(body);
    expect(result.ok && result.event.type === 'text' && Object.getPrototypeOf(result.event.messages[0])).toBe(Object.prototype);
  });
});

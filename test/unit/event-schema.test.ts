import { describe, expect, it } from 'vitest';
import { parseAcceptedBody, parseInboundEvent } from '#inbound/event-schema.ts';
import { parseIsoWithOffset } from '#inbound/iso-timestamp.ts';

const now = () => new Date().toISOString();
const call = (overrides: Record<string, unknown> = {}) => ({
  type: 'call',
  external_id: 'call-1',
  occurred_at: now(),
  audio: { url: 'https://records.example.com/1.mp3', format: 'mp3' },
  ...overrides,
});
const text = (overrides: Record<string, unknown> = {}) => ({
  type: 'text',
  external_id: 'chat-1',
  occurred_at: now(),
  messages: [{ text: 'hi', timestamp: now(), author_name: 'Ann', author_role: 'client' }],
  ...overrides,
});

function issuesOf(body: unknown) {
  const result = parseInboundEvent(body);
  if (result.ok) throw new Error('expected a validation failure');
  return result.issues;
}

describe('inbound event schema', () => {
  it('accepts a minimal call and a minimal dialog, dropping unknown fields', () => {
    const result = parseInboundEvent({ ...call(), surprise: true });
    expect(result.ok && result.event).toMatchObject({ type: 'call', external_id: 'call-1' });
    expect(result.ok && 'surprise' in result.event).toBe(false);
    expect(parseInboundEvent(text()).ok).toBe(true);
  });

  it('never coerces: null or a number in place of a string, a string in place of an integer', () => {
    expect(issuesOf(call({ external_id: 42 }))).toEqual([{ field: 'external_id', message: expect.any(String) }]);
    expect(issuesOf(call({ source_channel: null }))[0]?.field).toBe('source_channel');
    expect(issuesOf(call({ audio: { url: 'https://a.example.com/x', format: 'mp3', duration_seconds: '63' } }))[0]?.field).toBe(
      'audio.duration_seconds',
    );
    expect(issuesOf(call({ metadata: [] }))[0]?.field).toBe('metadata');
    expect(issuesOf(call({ metadata: null }))[0]?.field).toBe('metadata');
  });

  it('reports nested fields in dot notation', () => {
    const messages = [{ text: null, timestamp: now(), author_name: 'Ann', author_role: 'client' }];
    expect(issuesOf(text({ messages }))).toEqual([{ field: 'messages.0.text', message: expect.any(String) }]);
    expect(issuesOf(call({ audio: { format: 'mp3' } }))[0]?.field).toBe('audio.url');
    expect(issuesOf(call({ audio: undefined }))[0]?.field).toBe('audio');
  });

  it('checks every field rule of an event', () => {
    expect(issuesOf(call({ external_id: 'has space' }))[0]?.field).toBe('external_id');
    expect(issuesOf(call({ external_id: 'x'.repeat(256) }))[0]?.field).toBe('external_id');
    expect(parseInboundEvent(call({ external_id: 'A-z0.9_:x'.padEnd(255, 'x') })).ok).toBe(true);
    expect(issuesOf(call({ source_channel: 'c'.repeat(65) }))[0]?.field).toBe('source_channel');
    expect(issuesOf(call({ status: 's'.repeat(33) }))[0]?.field).toBe('status');
    expect(issuesOf(call({ audio: { url: 'https://a.example.com/x', format: 'MP3' } }))[0]?.field).toBe('audio.format');
    expect(issuesOf(call({ audio: { url: 'https://a.example.com/x', format: 'abcdefghi' } }))[0]?.field).toBe('audio.format');
    expect(issuesOf(call({ audio: { url: 'https://a.example.com/x', format: 'mp3', channels: 3 } }))[0]?.field).toBe('audio.channels');
    expect(issuesOf(call({ audio: { url: 'https://a.example.com/x', format: 'mp3', duration_seconds: 2147483648 } }))[0]?.field).toBe(
      'audio.duration_seconds',
    );
    expect(issuesOf(call({ audio: { url: 'https://a.example.com/x', format: 'mp3', duration_seconds: 1.5 } }))[0]?.field).toBe(
      'audio.duration_seconds',
    );
    expect(issuesOf(call({ audio: { url: `https://a.example.com/${'x'.repeat(2048)}`, format: 'mp3' } }))[0]?.field).toBe('audio.url');
    expect(issuesOf({ ...call(), type: 'video' })[0]?.field).toBe('type');
    expect(issuesOf({ external_id: 'x' })[0]?.field).toBe('type');
  });

  it('needs 1 to 2000 messages in a dialog', () => {
    const message = { text: 'hi', timestamp: now(), author_name: 'Ann', author_role: 'client' };
    expect(issuesOf(text({ messages: [] }))[0]?.field).toBe('messages');
    expect(parseInboundEvent(text({ messages: Array(2000).fill(message) })).ok).toBe(true);
    expect(issuesOf(text({ messages: Array(2001).fill(message) }))[0]?.field).toBe('messages');
  });

  it('needs an explicit zone offset and an occurred_at within one year back and one day ahead', () => {
    expect(issuesOf(call({ occurred_at: '2026-01-01T10:00:00' }))[0]?.field).toBe('occurred_at');
    expect(issuesOf(call({ occurred_at: new Date(Date.now() - 400 * 86_400_000).toISOString() }))[0]?.field).toBe('occurred_at');
    expect(issuesOf(call({ occurred_at: new Date(Date.now() + 2 * 86_400_000).toISOString() }))[0]?.field).toBe('occurred_at');
    expect(parseInboundEvent(call({ occurred_at: new Date(Date.now() + 20 * 3_600_000).toISOString() })).ok).toBe(true);
    expect(parseInboundEvent(call({ occurred_at: new Date(Date.now() - 360 * 86_400_000).toISOString() })).ok).toBe(true);
  });

  it('parses ISO timestamps with offsets and refuses impossible dates', () => {
    expect(parseIsoWithOffset('2026-03-01T10:00:00+03:00')).toBe(Date.parse('2026-03-01T07:00:00Z'));
    expect(parseIsoWithOffset('2026-03-01T10:00Z')).toBe(Date.parse('2026-03-01T10:00:00Z'));
    expect(parseIsoWithOffset('2026-03-01T10:00:00.123456-05:30')).toBeTypeOf('number');
    expect(parseIsoWithOffset('2026-02-30T10:00:00Z')).toBeUndefined();
    expect(parseIsoWithOffset('2026-03-01 10:00:00Z')).toBeUndefined();
    expect(parseIsoWithOffset('2026-03-01T10:00:00+0300')).toBeUndefined();
    expect(parseIsoWithOffset('2026-03-01T24:00:00Z')).toBeUndefined();
  });
});

describe('text in an event', () => {
  /** What JSON.parse makes of `"\ud800"`: half of a surrogate pair, alone. */
  const LONE = JSON.parse('"x\\ud800"') as string;
  const message = (fields: Record<string, unknown>) => [
    { text: 'hi', timestamp: now(), author_name: 'Ann', author_role: 'client', ...fields },
  ];
  const WELL_FORMED = 'must be well-formed Unicode (no lone surrogate)';

  it.each([
    ['source_channel', call({ source_channel: LONE })],
    ['status', call({ status: LONE })],
    ['audio.url', call({ audio: { url: `https://a.example.com/${LONE}`, format: 'mp3' } })],
    ['messages.0.text', text({ messages: message({ text: LONE }) })],
    ['messages.0.author_name', text({ messages: message({ author_name: LONE }) })],
    ['messages.0.author_role', text({ messages: message({ author_role: LONE }) })],
    ['messages.0.external_id', text({ messages: message({ external_id: LONE }) })],
    ['messages.0.author_id', text({ messages: message({ author_id: LONE }) })],
    ['metadata.operator', call({ metadata: { operator: LONE } })],
    ['metadata.tags.1', text({ metadata: { tags: ['a', LONE] } })],
  ])('refuses a lone surrogate in %s, naming it, on arrival and when read again', (field, body) => {
    expect(issuesOf(body)).toEqual([{ field, message: WELL_FORMED }]);
    expect(parseAcceptedBody(body)).toEqual({ ok: false, issues: [{ field, message: WELL_FORMED }] });
  });

  it('refuses a metadata key with a lone surrogate, naming it with U+FFFD in its place', () => {
    expect(issuesOf(call({ metadata: { [`k${LONE}`]: 1 } }))).toEqual([
      { field: 'metadata.kx\ufffd', message: 'key must be well-formed Unicode (no lone surrogate)' },
    ]);
  });

  it('takes emoji, Cyrillic and control characters where no filter reads them', () => {
    const body = text({
      messages: message({ text: 'line\nnext\u0000 😀 привет', author_name: '\u202eAnn' }),
      metadata: { 'k\u0000': '\u202e' },
    });
    expect(parseInboundEvent(body).ok).toBe(true);
  });

  it.each(['\u0000', '\t', '\u007f', '\u0085', '\u202e', '\u202a', '\u2066', '\u2069', '\u200f', '\u061c'])(
    'refuses %j in source_channel and a string metadata.direction: they are shown in filter lists',
    (character) => {
      const message = 'must not contain control characters or bidirectional formatting characters (it is shown in filter lists)';
      expect(issuesOf(call({ source_channel: `web${character}site` }))).toEqual([{ field: 'source_channel', message }]);
      expect(issuesOf(call({ metadata: { direction: `in${character}bound` } }))).toEqual([{ field: 'metadata.direction', message }]);
      expect(issuesOf(text({ source_channel: character }))).toEqual([{ field: 'source_channel', message }]);
    },
  );

  it('leaves a filter value accepted earlier as it was when the body is read again', () => {
    const body = call({ source_channel: 'web\u202esite', metadata: { direction: 'in\u0000' } });
    expect(parseAcceptedBody(body)).toMatchObject({ ok: true, event: { source_channel: 'web\u202esite' } });
    expect(parseInboundEvent(call({ metadata: { direction: 7 } })).ok).toBe(true);
  });
});

describe('an accepted body read again (the nightly collection)', () => {
  it('gives the event acceptance gave, unknown fields dropped', () => {
    for (const body of [
      call({ surprise: true, metadata: { direction: 'inbound' } }),
      text({ messages: [{ text: 'hi', timestamp: now(), author_name: 'A', author_role: 'r', extra: 1 }] }),
    ]) {
      const atAcceptance = parseInboundEvent(body);
      expect(atAcceptance.ok).toBe(true);
      expect(parseAcceptedBody(body)).toEqual(atAcceptance);
    }
  });

  it('has no window on occurred_at: one accepted a year ago is read as sent', () => {
    const body = call({ occurred_at: '2019-06-01T10:00:00+03:00' });
    expect(issuesOf(body)).toEqual([{ field: 'occurred_at', message: 'must be between one year ago and one day ahead' }]);
    expect(parseAcceptedBody(body)).toMatchObject({ ok: true, event: { occurred_at: '2019-06-01T10:00:00+03:00' } });
  });

  it('keeps every rule on what the body holds', () => {
    const refused = [
      call({ occurred_at: '2019-06-01T10:00:00' }),
      call({ external_id: 'has space' }),
      text({ messages: [] }),
      call({ metadata: [] }),
      { type: 'video' },
      [],
    ];
    for (const body of refused) {
      const read = parseAcceptedBody(body);
      expect(read.ok).toBe(false);
      expect(read).toEqual(parseInboundEvent(body));
    }
  });
});

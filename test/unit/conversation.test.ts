import { describe, expect, it } from 'vitest';
import { normalizeDialog } from '#collection/conversation.ts';
import type { TextEvent } from '#inbound/event-schema.ts';

const ids = { event_id: 7, source_id: 'src_1', link_id: 'lnk_1' };
const message = (text: string, role: string, timestamp: string, extra: Partial<TextEvent['messages'][number]> = {}) => ({
  text,
  author_name: role === 'client' ? 'Ann' : 'Bot',
  author_role: role,
  timestamp,
  ...extra,
});

describe('dialog normalization (the hand-off format)', () => {
  it('orders by sequence_number, with the array position from 1 as default and ties in the sender order', () => {
    const event: TextEvent = {
      type: 'text',
      external_id: 'chat-1',
      occurred_at: '2026-11-20T10:00:00Z',
      messages: [
        message('third', 'client', '2026-11-20T10:00:30Z', { sequence_number: 30 }),
        message('first', 'client', '2026-11-20T10:00:00Z', { sequence_number: 10 }),
        message('second', 'agent', '2026-11-20T10:05:00Z', { sequence_number: 20, external_id: 'm-2' }),
      ],
    };
    const conversation = normalizeDialog(ids, event);
    expect(conversation.messages!.map((m) => [m.sequence_number, m.text, m.external_id])).toEqual([
      [10, 'first', 'chat-1:10'],
      [20, 'second', 'm-2'],
      [30, 'third', 'chat-1:30'],
    ]);
    // Times never reorder: the agent's late timestamp stays second; start and end come from the timestamps.
    expect(conversation.started_at).toBe('2026-11-20T10:00:00.000Z');
    expect(conversation.ended_at).toBe('2026-11-20T10:05:00.000Z');
    expect(conversation.messages!.map((m) => m.response_time_seconds)).toEqual([null, 300, -270]);
    expect(conversation).toMatchObject({
      ...ids,
      external_id: 'chat-1',
      type: 'text',
      recording: null,
      source_channel: null,
      status: null,
      metadata: null,
    });
  });

  it('defaults sequence numbers to positions and measures a response from the other side', () => {
    const event: TextEvent = {
      type: 'text',
      external_id: 'chat-2',
      occurred_at: '2026-11-20T10:00:00+03:00',
      source_channel: 'web',
      metadata: { lang: 'ru' },
      messages: [
        message('hi', 'client', '2026-11-20T10:00:00+03:00'),
        message('anyone?', 'client', '2026-11-20T10:01:00+03:00'),
        message('hello', 'agent', '2026-11-20T10:03:00+03:00'),
        message('thanks', 'client', '2026-11-20T10:03:30+03:00'),
      ],
    };
    const conversation = normalizeDialog(ids, event);
    expect(conversation.messages!.map((m) => [m.sequence_number, m.external_id, m.response_time_seconds])).toEqual([
      [1, 'chat-2:1', null],
      [2, 'chat-2:2', null],
      [3, 'chat-2:3', 120],
      [4, 'chat-2:4', 30],
    ]);
    expect(conversation).toMatchObject({ source_channel: 'web', metadata: { lang: 'ru' }, occurred_at: '2026-11-20T10:00:00+03:00' });
  });
});

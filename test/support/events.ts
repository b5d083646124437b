let counter = 0;

/** A unique external_id per call, so tests never collide on deduplication by accident. */
export function uniqueId(prefix = 'evt'): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now()}-${counter}`;
}

export function callEvent(overrides: Record<string, unknown> = {}) {
  return {
    type: 'call',
    external_id: uniqueId('call'),
    occurred_at: new Date().toISOString(),
    source_channel: 'website',
    status: 'completed',
    metadata: { direction: 'inbound', operator: 'Ann', score: 4.5, vip: true, nested: { a: 1 } },
    audio: { url: 'https://records.example.com/calls/1.mp3', format: 'mp3', duration_seconds: 63, channels: 2 },
    ...overrides,
  };
}

export function message(i: number, textLength = 20) {
  return {
    text: `message ${i} `.padEnd(textLength, 'x'),
    timestamp: new Date(Date.now() - 60_000 + i).toISOString(),
    author_name: i % 2 ? 'Operator Ann' : 'Client Bob',
    author_role: i % 2 ? 'operator' : 'client',
  };
}

export function textEvent(messageCount = 3, overrides: Record<string, unknown> = {}, textLength = 20) {
  return {
    type: 'text',
    external_id: uniqueId('chat'),
    occurred_at: new Date().toISOString(),
    source_channel: 'telegram',
    metadata: { topic: 'refund' },
    messages: Array.from({ length: messageCount }, (_, i) => message(i, textLength)),
    ...overrides,
  };
}

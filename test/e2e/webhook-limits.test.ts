import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RATE_LIMITS, rateWindow } from '#shared/rate-limits.ts';
import { MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK, MAX_REQUESTS_PER_MINUTE_PER_LINK, MAX_UNKNOWN_TOKENS_PER_IP } from '#shared/limits.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { http, postJson, rawExchange } from '../support/http.ts';
import { callEvent } from '../support/events.ts';

/** Today in UTC, and when it ends: the quota's window, written out here so the test checks the stored key's format. */
function utcDay() {
  const id = new Date().toISOString().slice(0, 10);
  return { id, endMs: Date.parse(`${id}T00:00:00Z`) + 24 * 60 * 60 * 1000 };
}

const BODY_TIMEOUT_MS = 400;
let twin: TestTwin;
const eventsUrl = (token: string) => `${twin.webhookUrl}/api/v1/webhooks/${token}/events`;
const pingUrl = (token: string) => `${twin.webhookUrl}/api/v1/webhooks/${token}/ping`;

beforeAll(async () => {
  twin = await startTestTwin({ bodyTimeoutMs: BODY_TIMEOUT_MS });
});
afterAll(() => twin.close());

describe('body limits', () => {
  it('answers 413 for a body over 1 MiB, and accepts exactly 1 MiB of whitespace-padded JSON', async () => {
    const link = await boundLink(twin, 'calls');
    const event = JSON.stringify(callEvent());
    const exact = event.padEnd(1024 * 1024, ' ');
    const over = event.padEnd(1024 * 1024 + 1, ' ');

    const accepted = await postJson(eventsUrl(link.token), exact);
    const refused = await postJson(eventsUrl(link.token), over);

    expect(accepted.status).toBe(201);
    expect(refused.status).toBe(413);
    expect(refused.body).toEqual({ error: 'Request body exceeds 1 MiB' });
  });

  it('answers 413 as soon as a chunked body passes 1 MiB', async () => {
    const link = await boundLink(twin, 'calls');
    const chunk = Buffer.alloc(1024 * 1024 + 10, 0x20);
    const head =
      `POST /api/v1/webhooks/${link.token}/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n${chunk.byteLength.toString(16)}\r\n`;
    const answer = await rawExchange(eventsUrl(link.token), 'POST', head, chunk, 2000);
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(answer).toContain('{"error":"Request body exceeds 1 MiB"}');
  });

  it('answers 408 when the body is not fully received in time', async () => {
    const link = await boundLink(twin, 'calls');
    const head =
      `POST /api/v1/webhooks/${link.token}/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `Content-Length: 500\r\n\r\n{"type":"call",`;
    const answer = await rawExchange(eventsUrl(link.token), 'POST', head, undefined, BODY_TIMEOUT_MS + 1500);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(answer).toContain('"error"');
  });
});

describe('rate limits', () => {
  it('allows 600 requests a minute per link, then 429 with Retry-After until the minute ends', async () => {
    // A fixed window: all 601 requests must fall in one. On a loaded machine they may not; the window they started in
    // tells, and the count starts again in the next window with fresh links (a whole minute is ample for 601).
    const windowEnd = () => rateWindow(RATE_LIMITS.requestsPerLinkPerMinute, 'any-link', Date.now()).endMs;
    for (let attempt = 1; ; attempt += 1) {
      const startedIn = windowEnd();
      const link = await boundLink(twin, 'calls');
      const other = await boundLink(twin, 'calls');
      const statuses: number[] = [];
      for (let batch = 0; batch < MAX_REQUESTS_PER_MINUTE_PER_LINK / 50; batch += 1) {
        const answers = await Promise.all(Array.from({ length: 50 }, () => http(pingUrl(link.token))));
        statuses.push(...answers.map((answer) => answer.status));
      }
      const limited = await postJson(eventsUrl(link.token), callEvent());
      const otherLink = await http(pingUrl(other.token));
      if (windowEnd() !== startedIn && attempt < 3) {
        // The minute turned over during the requests: wait for the next window to begin, then count again.
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, windowEnd() - Date.now()) + 50));
        continue;
      }

      expect(statuses.every((status) => status === 200)).toBe(true);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ error: 'Request rate limit of this link exceeded' });
      const retryAfter = Number(limited.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(otherLink.status).toBe(200);
      return;
    }
  }, 240_000);

  it('stops accepting new events after 100,000 a UTC day, still answers duplicates, and says when to retry', async () => {
    const link = await boundLink(twin, 'calls');
    const earlier = callEvent();
    expect((await postJson(eventsUrl(link.token), earlier)).status).toBe(201);
    const day = utcDay();
    await twin.dynamo.send(
      new PutCommand({
        TableName: twin.twin.tables.usage,
        Item: { pk: `link#${link.linkId}`, sk: `${day.id}#limits`, day_count: MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK - 1 },
      }),
    );

    const last = await postJson(eventsUrl(link.token), callEvent());
    const sentAt = Date.now();
    const overQuota = await postJson(eventsUrl(link.token), callEvent());
    const answeredAt = Date.now();
    const duplicate = await postJson(eventsUrl(link.token), earlier);

    expect(last.status).toBe(201);
    expect(overQuota.status).toBe(429);
    // The seconds to midnight as the function saw them, somewhere between sending and answering however slow the machine.
    const secondsToMidnight = (at: number) => Math.max(1, Math.ceil((day.endMs - at) / 1000));
    expect(Number(overQuota.headers['retry-after'])).toBeGreaterThanOrEqual(secondsToMidnight(answeredAt));
    expect(Number(overQuota.headers['retry-after'])).toBeLessThanOrEqual(secondsToMidnight(sentAt));
    expect(duplicate.status).toBe(200);
    expect(duplicate.body.status).toBe('duplicate');
  });

  it('does not count duplicates against the daily quota', async () => {
    const link = await boundLink(twin, 'calls');
    const event = callEvent();
    const day = utcDay();
    await twin.dynamo.send(
      new PutCommand({
        TableName: twin.twin.tables.usage,
        Item: { pk: `link#${link.linkId}`, sk: `${day.id}#limits`, day_count: MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK - 2 },
      }),
    );
    expect((await postJson(eventsUrl(link.token), event)).status).toBe(201);
    for (let i = 0; i < 3; i += 1) expect((await postJson(eventsUrl(link.token), event)).status).toBe(200);
    expect((await postJson(eventsUrl(link.token), callEvent())).status).toBe(201);
  });
});

describe('protection against token guessing', () => {
  it('refuses an address’s unknown tokens after many, serves its valid link (a shared address), and leaves other addresses alone', async () => {
    const link = await boundLink(twin, 'calls');
    const guesser = '127.0.0.22';
    const bystander = '127.0.0.33';

    const guesses = [];
    for (let i = 0; i < MAX_UNKNOWN_TOKENS_PER_IP + 5; i += 1) {
      guesses.push((await http(pingUrl(`whk_${String(i).padStart(43, 'g')}`), { from: guesser })).status);
    }
    const sharedAddressValid = await postJson(eventsUrl(link.token), callEvent(), guesser);
    const sharedAddressPing = await http(pingUrl(link.token), { from: guesser });
    const blockedGuess = await http(pingUrl('whk_nonsense'), { from: guesser });
    const bystanderValid = await postJson(eventsUrl(link.token), callEvent(), bystander);
    const bystanderUnknown = await http(pingUrl(`whk_${'b'.repeat(43)}`), { from: bystander });

    expect(guesses.slice(0, MAX_UNKNOWN_TOKENS_PER_IP).every((status) => status === 404)).toBe(true);
    expect(guesses.slice(MAX_UNKNOWN_TOKENS_PER_IP).every((status) => status === 429)).toBe(true);
    expect(sharedAddressValid.status).toBe(201);
    expect(sharedAddressValid.body).toMatchObject({ status: 'accepted' });
    expect(sharedAddressPing.status).toBe(200);
    expect(blockedGuess.status).toBe(429);
    expect(blockedGuess.body).toEqual({ error: 'Too many requests with unknown links from this address' });
    expect(Number(blockedGuess.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(bystanderValid.status).toBe(201);
    expect(bystanderUnknown.status).toBe(404);
  });
});

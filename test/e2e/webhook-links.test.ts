import { GetCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '#shared/secrets.ts';
import { afterLinkCache, boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { http, postJson } from '../support/http.ts';
import { callEvent } from '../support/events.ts';

let twin: TestTwin;
const eventsUrl = (token: string) => `${twin.webhookUrl}/api/v1/webhooks/${token}/events`;
const pingUrl = (token: string) => `${twin.webhookUrl}/api/v1/webhooks/${token}/ping`;

beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin.close());

describe('link lifecycle', () => {
  it('issues a link with a high-entropy token and a URL on this server', async () => {
    const issued = await twin.admin('links', 'issue', '--type', 'calls');
    expect(issued).toMatchObject({ state: 'issued', connector_type: 'calls' });
    expect(issued.token).toMatch(/^whk_[A-Za-z0-9_-]{43}$/);
    expect(issued.url).toBe(`${twin.webhookUrl}/api/v1/webhooks/${issued.token}/events`);
  });

  it('stores only a hash of the token', async () => {
    const issued = await twin.admin('links', 'issue', '--type', 'calls');
    const { links } = await twin.admin('links', 'list');
    const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.links }));
    expect(JSON.stringify(Items)).not.toContain(issued.token);
    expect(JSON.stringify(Items)).toContain(hashSecret(issued.token));
    expect(links.length).toBeGreaterThan(0);
  });

  it('refuses to bind a link twice', async () => {
    const link = await boundLink(twin, 'dialogs');
    await expect(twin.admin('links', 'bind', link.linkId)).rejects.toThrow(/is bound, not issued/);
  });

  it('keeps the old token working for 24 hours after a reissue, as the same source, then answers 404', async () => {
    const link = await boundLink(twin, 'calls');
    const event = callEvent();
    const first = await postJson(eventsUrl(link.token), event);

    const reissued = await twin.admin('links', 'reissue', link.linkId);
    const graceMs = Date.parse(reissued.previous_token_valid_until) - Date.now();
    const viaNew = await postJson(eventsUrl(reissued.token), event);
    const viaOld = await http(pingUrl(link.token));

    expect(graceMs).toBeGreaterThan(24 * 3_600_000 - 60_000);
    expect(graceMs).toBeLessThanOrEqual(24 * 3_600_000);
    expect(viaNew.status).toBe(200);
    expect(viaNew.body).toEqual({ status: 'duplicate', external_id: event.external_id, event_id: first.body.event_id });
    expect(viaOld.body).toEqual({ status: 'ok', state: 'bound', connector_type: 'calls' });

    const oldTokenKey = { pk: `token#${hashSecret(link.token)}` };
    const stored = await twin.dynamo.send(new GetCommand({ TableName: twin.twin.tables.links, Key: oldTokenKey }));
    expect(stored.Item).toMatchObject({ link_id: link.linkId, valid_until_ms: Date.parse(reissued.previous_token_valid_until) });

    // Arrange the end of the grace period instead of waiting a day.
    await twin.dynamo.send(
      new UpdateCommand({
        TableName: twin.twin.tables.links,
        Key: oldTokenKey,
        UpdateExpression: 'SET valid_until_ms = :past',
        ExpressionAttributeValues: { ':past': Date.now() - 1 },
      }),
    );
    // A warm function keeps the link it read for a second (LINK_CACHE_MS); the stored deadline applies after it.
    await afterLinkCache();
    expect((await http(pingUrl(link.token))).status).toBe(404);
    expect((await postJson(eventsUrl(link.token), callEvent())).status).toBe(404);
    expect((await postJson(eventsUrl(reissued.token), callEvent())).status).toBe(201);
  });

  it('honours a grace period stored under the name it had before time fields named their unit (valid_until)', async () => {
    const link = await boundLink(twin, 'calls');
    await twin.admin('links', 'reissue', link.linkId);
    const oldTokenKey = { pk: `token#${hashSecret(link.token)}` };
    const setLegacyDeadline = (deadlineMs: number) =>
      twin.dynamo.send(
        new UpdateCommand({
          TableName: twin.twin.tables.links,
          Key: oldTokenKey,
          UpdateExpression: 'SET valid_until = :until REMOVE valid_until_ms',
          ExpressionAttributeValues: { ':until': deadlineMs },
        }),
      );

    await setLegacyDeadline(Date.now() + 60_000);
    expect((await http(pingUrl(link.token))).status).toBe(200);
    await setLegacyDeadline(Date.now() - 1);
    await afterLinkCache();
    expect((await http(pingUrl(link.token))).status).toBe(404);
  });

  it('takes a revocation to a warm link within a second: every token copy says revoked, and the link answers 404', async () => {
    const link = await boundLink(twin, 'calls');
    expect((await postJson(eventsUrl(link.token), callEvent())).status).toBe(201);
    const revokedAt = Date.now();
    await twin.admin('links', 'revoke', link.linkId);
    const copy = await twin.dynamo.send(
      new GetCommand({ TableName: twin.twin.tables.links, Key: { pk: `token#${hashSecret(link.token)}` } }),
    );
    expect(copy.Item).toMatchObject({ link_id: link.linkId, state: 'revoked' });
    await afterLinkCache(revokedAt);
    expect((await postJson(eventsUrl(link.token), callEvent())).status).toBe(404);
    expect((await http(pingUrl(link.token))).status).toBe(404);
  });

  it('answers 404 on every token of a revoked link at once', async () => {
    const link = await boundLink(twin, 'calls');
    const reissued = await twin.admin('links', 'reissue', link.linkId);
    const revoked = await twin.admin('links', 'revoke', link.linkId);

    expect(revoked).toEqual({ link_id: link.linkId, state: 'revoked' });
    expect((await http(pingUrl(link.token))).status).toBe(404);
    expect((await http(pingUrl(reissued.token))).status).toBe(404);
    expect((await postJson(eventsUrl(reissued.token), callEvent())).body).toEqual({ error: 'Unknown webhook link' });
    await expect(twin.admin('links', 'reissue', link.linkId)).rejects.toThrow(/revoked/);
  });

  it('refuses recording links outside the allow-list of a source that has one', async () => {
    const link = await boundLink(twin, 'calls', 'records.example.com,*.cdn.example.net');
    const allowed = await postJson(eventsUrl(link.token), callEvent({ audio: { url: 'https://eu.cdn.example.net/1.mp3', format: 'mp3' } }));
    const refused = await postJson(
      eventsUrl(link.token),
      callEvent({ audio: { url: 'https://elsewhere.example.org/1.mp3', format: 'mp3' } }),
    );
    expect(allowed.status).toBe(201);
    expect(refused.status).toBe(400);
    expect(refused.body.details).toEqual([{ field: 'audio.url', message: 'host is not in the allow-list of this source' }]);
  });

  it('answers admin commands on unknown links with an error object', async () => {
    await expect(twin.admin('links', 'bind', 'lnk_missing')).rejects.toThrow(/No link lnk_missing/);
    await expect(twin.admin('links', 'revoke', 'lnk_missing')).rejects.toThrow(/No link lnk_missing/);
  });
});

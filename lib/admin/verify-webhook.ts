import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createEventsRepository } from '#inbound/events-repository.ts';
import { createLinksRepository } from '#inbound/links-repository.ts';
import { createLinksService } from '#inbound/links-service.ts';
import { routePath } from '#functions/routes.ts';
import { createBodyStore } from '#shared/store/body-store.ts';
import { createUsageRepository } from '#shared/metering/usage-repository.ts';
import { LINK_CACHE_MS } from '#shared/limits.ts';
import { CheckFailure, type CheckOutcome, type VerifyCheck, type VerifyContext } from './verify-check.ts';
import { answered, apiRequest, field, requestName, type ApiAnswer } from './verify-http.ts';

/**
 * A revocation reaches a warm webhook function within LINK_CACHE_MS (it keeps a link that long); the ping is asked
 * again until then, with room for a slow stage, before the refusal counts as missing.
 */
const REVOCATION_DEADLINE_MS = LINK_CACHE_MS + 10_000;
const REVOCATION_POLL_MS = 250;

/** A one-message dialog, as a sender writes it; `external_id` marks it as the verify command's. */
function verifyDialog(externalId: string, now: number) {
  const at = new Date(now).toISOString();
  return {
    type: 'text',
    external_id: externalId,
    occurred_at: at,
    messages: [{ text: 'admin verify', timestamp: at, author_name: 'admin verify', author_role: 'operator' }],
  };
}

/**
 * `webhook`: a temporary dialogs link, issued and bound through the links service (as `admin links` does), pinged,
 * sent one dialog (201 with its event_id) and its duplicate (200 `duplicate`, the same event_id), revoked (its ping
 * then 404). The event's item (and a body in the bucket, had it one) is deleted again; the link itself cannot be
 * deleted through the product's code, so it stays, revoked: every token of it answers 404 and `links list` shows it so.
 */
export const webhookCheck: VerifyCheck = {
  name: 'webhook',
  async run(context): Promise<CheckOutcome> {
    const { target } = context;
    const links = createLinksService({
      links: createLinksRepository(target.dynamo, target.tables.links),
      events: createEventsRepository(target.dynamo, target.tables.inboundEvents),
      publicBaseUrl: target.webhookBaseUrl,
      now: context.now,
    });
    const events = createEventsRepository(target.dynamo, target.tables.inboundEvents);

    context.status('webhook: issuing a temporary dialogs link');
    const issued = await links.issue('dialogs', []);
    const linkId = issued.link_id;
    const measured: Record<string, unknown> = { link_id: linkId };
    // Undone last, after the revocation: the link's requests wrote their usage before they answered, so none is still to
    // come, and no cost report counts verify's own link.
    context.cleanup.add(
      `usage items of webhook link ${linkId}`,
      async () => void (await createUsageRepository(target.dynamo, target.tables.usage).removeSubject(`link#${linkId}`)),
      `leave them: they cost a fraction of a cent in cost report, under link#${linkId}`,
    );
    const revoke = context.cleanup.add(
      `webhook link ${linkId}`,
      async () => void (await links.revoke(linkId)),
      `npm run --silent admin -- links revoke ${linkId}${context.adminFlags}`,
    );
    const { source_id: sourceId } = await links.bind(linkId);
    const ping = routePath('WebhookPing', { token: issued.token });
    const post = routePath('WebhookPostEvent', { token: issued.token });

    context.status('webhook: ping');
    const webhookApi = { ...context, apiUrl: context.webhookUrl };
    const pinged = await apiRequest(webhookApi, ping);
    if (pinged.status !== 200 || field(pinged, 'state') !== 'bound' || field(pinged, 'connector_type') !== 'dialogs') {
      throw new CheckFailure(
        `${requestName('GET', ping)} of a bound dialogs link to answer 200 {status:"ok", state:"bound", connector_type:"dialogs"}`,
        answered(pinged),
        FIX_WEBHOOKS,
        measured,
      );
    }

    const externalId = `admin-verify-${randomBytes(6).toString('hex')}`;
    const removeEvent = context.cleanup.add(
      `webhook event ${externalId} of link ${linkId}`,
      async () => {
        const removed = await events.remove(sourceId, externalId);
        if (removed?.body_s3_key) {
          const { s3, bucket } = await target.services();
          await createBodyStore(s3, bucket).delete(removed.body_s3_key);
        }
        return removed !== undefined;
      },
      'nothing to do: the link is revoked, so no collection task takes the event, and it expires with the queue (30 days)',
    );
    measured.external_id = externalId;
    context.status('webhook: one dialog, then its duplicate');
    const dialog = verifyDialog(externalId, context.now());
    const accepted = await apiRequest(webhookApi, post, { method: 'POST', body: dialog });
    const eventId = field(accepted, 'event_id');
    if (accepted.status !== 201 || field(accepted, 'status') !== 'accepted' || typeof eventId !== 'number') {
      throw new CheckFailure(
        `${requestName('POST', post)} of a new dialog to answer 201 {status:"accepted", event_id}`,
        answered(accepted),
        FIX_WEBHOOKS,
        measured,
      );
    }
    measured.event_id = eventId;
    const repeated = await apiRequest(webhookApi, post, { method: 'POST', body: dialog });
    if (repeated.status !== 200 || field(repeated, 'status') !== 'duplicate' || field(repeated, 'event_id') !== eventId) {
      throw new CheckFailure(
        `${requestName('POST', post)} of the same dialog again to answer 200 {status:"duplicate", event_id:${eventId}}`,
        answered(repeated),
        FIX_WEBHOOKS,
        measured,
      );
    }

    context.status('webhook: revoking the link');
    await revoke();
    const refused = await refusedAfterRevocation(context, ping);
    if (refused.status !== 404) {
      throw new CheckFailure(
        `${requestName('GET', ping)} of the revoked link to answer 404 within ${REVOCATION_DEADLINE_MS / 1000} s`,
        `${answered(refused)}, still after ${REVOCATION_DEADLINE_MS / 1000} s`,
        'A revoked link must stop working at once: redeploy this version (npx cdk deploy) and verify again',
        measured,
      );
    }
    await removeEvent();
    return {
      status: 'pass',
      detail:
        `link ${linkId} bound and pinged; event ${eventId} accepted (201), its duplicate answered 200 with the same event_id; revoked, ` +
        `its ping 404. The event was deleted; the link stays, revoked (links cannot be deleted)`,
      ...measured,
    };
  },
};

const FIX_WEBHOOKS =
  'The webhook API does not answer as its OpenAPI document says: deploy this version (npx cdk deploy; locally restart npm start) and ' +
  'verify again';

/** Pings until the revocation shows (a warm function keeps a link for LINK_CACHE_MS), or the deadline passes. */
async function refusedAfterRevocation(context: VerifyContext, ping: string): Promise<ApiAnswer> {
  const deadline = Date.now() + REVOCATION_DEADLINE_MS;
  for (;;) {
    const answer = await apiRequest(context, ping);
    if (answer.status === 404 || Date.now() > deadline) return answer;
    await sleep(REVOCATION_POLL_MS, undefined, { signal: context.signal });
  }
}

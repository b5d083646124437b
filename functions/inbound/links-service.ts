import { ConflictError, NotFoundError } from '#shared/errors.ts';
import { LINK_REISSUE_GRACE_MS, METADATA_SCHEMA_SAMPLE_EVENTS } from '#shared/limits.ts';
import { hashSecret, newId, newSecret, secretPrefix } from '#shared/secrets.ts';
import type { EventsRepository } from './events-repository.ts';
import { storedMetadataFields, type MetadataFieldType, type StoredEvent } from './stored-event.ts';
import { LINK_TOKEN_PREFIX, type ConnectorType, type Link } from './link-model.ts';
import type { LinksRepository } from './links-repository.ts';
import { routePath } from '#functions/routes.ts';

/** Operator actions on webhook links (the admin CLI, lib/admin/README.md): what support and administrators do. */
export interface LinksServiceDeps {
  links: LinksRepository;
  events: EventsRepository;
  /** Base the link URLs are built on, e.g. `https://abc.execute-api.eu-west-1.amazonaws.com/prod`. */
  publicBaseUrl: string;
  now: () => number;
}

const TOKEN_PREFIX_SHOWN = 4;

function linkUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${routePath('WebhookPostEvent', { token })}`;
}

export function createLinksService(deps: LinksServiceDeps) {
  const nowIso = () => new Date(deps.now()).toISOString();

  async function existingLink(linkId: string): Promise<Link> {
    const link = await deps.links.getLink(linkId);
    if (!link) throw new NotFoundError(`No link ${linkId}`);
    return link;
  }

  return {
    async issue(connectorType: ConnectorType, allowHosts: string[]) {
      const token = newSecret(LINK_TOKEN_PREFIX);
      const link: Link = {
        link_id: newId('lnk_'),
        state: 'issued',
        connector_type: connectorType,
        allow_hosts: allowHosts.map((host) => host.toLowerCase()),
        token_prefix: secretPrefix(token, TOKEN_PREFIX_SHOWN),
        current_token_hash: hashSecret(token),
        created_at: nowIso(),
      };
      await deps.links.createLink(link);
      return {
        link_id: link.link_id,
        token,
        url: linkUrl(deps.publicBaseUrl, token),
        state: link.state,
        connector_type: link.connector_type,
        allow_hosts: link.allow_hosts,
      };
    },

    async bind(linkId: string) {
      const link = await existingLink(linkId);
      if (link.state !== 'issued') throw new ConflictError(`Link ${linkId} is ${link.state}, not issued`);
      const sourceId = newId('src_');
      if (!(await deps.links.bind(linkId, sourceId, nowIso()))) {
        throw new ConflictError(`Link ${linkId} changed state while binding`);
      }
      return { link_id: linkId, state: 'bound' as const, source_id: sourceId };
    },

    async reissue(linkId: string) {
      const link = await existingLink(linkId);
      if (link.state === 'revoked') throw new ConflictError(`Link ${linkId} is revoked`);
      const token = newSecret(LINK_TOKEN_PREFIX);
      const validUntil = deps.now() + LINK_REISSUE_GRACE_MS;
      const result = await deps.links.reissue(link, hashSecret(token), secretPrefix(token, TOKEN_PREFIX_SHOWN), nowIso(), validUntil);
      if (!result) throw new ConflictError(`Link ${linkId} was revoked while reissuing`);
      return {
        link_id: linkId,
        token,
        url: linkUrl(deps.publicBaseUrl, token),
        previous_token_valid_until: new Date(validUntil).toISOString(),
      };
    },

    async revoke(linkId: string) {
      if (!(await deps.links.revoke(linkId, nowIso()))) throw new NotFoundError(`No link ${linkId}`);
      return { link_id: linkId, state: 'revoked' as const };
    },

    async list() {
      const links = await deps.links.listLinks();
      return {
        links: links.map((link) => ({
          link_id: link.link_id,
          state: link.state,
          connector_type: link.connector_type,
          source_id: link.source_id ?? null,
          token_prefix: link.token_prefix,
          allow_hosts: link.allow_hosts,
          created_at: link.created_at,
          bound_at: link.bound_at ?? null,
          reissued_at: link.reissued_at ?? null,
          revoked_at: link.revoked_at ?? null,
        })),
      };
    },

    /** First-level metadata keys of the last accepted events; the newest event decides a key's type. */
    async schema(linkId: string) {
      const events = await recentEvents(linkId);
      // A Map, not an object: keys such as `toString` or `__proto__` must not meet Object.prototype.
      const fields = new Map<string, MetadataFieldType>();
      for (const event of events) {
        for (const [key, type] of storedMetadataFields(event.metadata_fields)) {
          if (!fields.has(key)) fields.set(key, type);
        }
      }
      // Object.fromEntries defines own properties, so even `__proto__` comes out as an ordinary JSON key.
      return { link_id: linkId, fields: Object.fromEntries(fields) as Record<string, MetadataFieldType> };
    },

    async filters(linkId: string) {
      const link = await existingLink(linkId);
      return {
        link_id: linkId,
        channels: [...(link.channel_values ?? [])].sort(),
        directions: link.connector_type === 'calls' ? [...(link.direction_values ?? [])].sort() : [],
      };
    },
  };

  async function recentEvents(linkId: string): Promise<StoredEvent[]> {
    const link = await existingLink(linkId);
    if (!link.source_id) return [];
    return deps.events.recent(link.source_id, METADATA_SCHEMA_SAMPLE_EVENTS, deps.now());
  }
}

import { linkView, type Link } from '#inbound/link-model.ts';
import type { LinksRepository, TokenRecord } from '#inbound/links-repository.ts';
import { MAX_FILTER_VALUES_PER_SOURCE } from '#shared/limits.ts';
import { conditionFailed, Faults } from './faults.ts';

/**
 * The links table in memory (`link#<id>` and `token#<hash>` items, each token with its copy of the link, kept as
 * the real repository keeps them: bind and revoke update the copies, a reissue copies the link).
 */
export class InMemoryLinksRepository implements LinksRepository {
  readonly links = new Map<string, Link>();
  readonly tokens = new Map<string, TokenRecord>();
  readonly faults = new Faults<keyof LinksRepository>();

  async findToken(tokenHash: string) {
    await this.faults.enter('findToken');
    const token = this.tokens.get(tokenHash);
    return token ? structuredClone(token) : undefined;
  }

  async getLink(linkId: string): Promise<Link | undefined> {
    await this.faults.enter('getLink');
    const link = this.links.get(linkId);
    return link ? structuredClone(link) : undefined;
  }

  async createLink(link: Link): Promise<void> {
    await this.faults.enter('createLink');
    if (this.tokens.has(link.current_token_hash)) throw conditionFailed();
    this.tokens.set(link.current_token_hash, structuredClone(linkView(link)));
    if (this.links.has(link.link_id)) throw conditionFailed();
    this.links.set(link.link_id, { ...structuredClone(link), token_hashes: new Set([link.current_token_hash]) });
  }

  async bind(linkId: string, sourceId: string, boundAt: string): Promise<boolean> {
    await this.faults.enter('bind');
    const link = this.links.get(linkId);
    if (!link || link.state !== 'issued') return false;
    Object.assign(link, { state: 'bound', source_id: sourceId, bound_at: boundAt });
    this.copyToTokens(link, { state: 'bound', source_id: sourceId }, 'issued');
    return true;
  }

  async reissue(current: Link, newTokenHash: string, tokenPrefix: string, reissuedAt: string, oldTokenValidUntil: number) {
    await this.faults.enter('reissue');
    if (this.tokens.has(newTokenHash)) throw conditionFailed();
    this.tokens.set(newTokenHash, structuredClone(linkView(current)));
    const link = this.links.get(current.link_id);
    if (!link || link.state === 'revoked') {
      this.tokens.get(newTokenHash)!.state = 'revoked';
      return undefined;
    }
    const previous = structuredClone(link);
    Object.assign(link, { current_token_hash: newTokenHash, token_prefix: tokenPrefix, reissued_at: reissuedAt });
    (link.token_hashes ??= new Set()).add(newTokenHash);
    const old = this.tokens.get(previous.current_token_hash);
    if (old && (old.valid_until_ms === undefined || old.valid_until_ms > oldTokenValidUntil)) old.valid_until_ms = oldTokenValidUntil;
    return { previous };
  }

  async revoke(linkId: string, revokedAt: string): Promise<boolean> {
    await this.faults.enter('revoke');
    const link = this.links.get(linkId);
    if (!link) return false;
    this.copyToTokens(link, { state: 'revoked' });
    link.state = 'revoked';
    link.revoked_at ??= revokedAt;
    return true;
  }

  private copyToTokens(link: Link, change: Partial<Link>, onlyFrom?: Link['state']): void {
    for (const hash of new Set([...(link.token_hashes ?? []), link.current_token_hash])) {
      const token = this.tokens.get(hash);
      if (token?.state && (!onlyFrom || token.state === onlyFrom)) Object.assign(token, change);
    }
  }

  async listLinks(): Promise<Link[]> {
    await this.faults.enter('listLinks');
    return [...this.links.values()].map((link) => structuredClone(link)).sort((a, b) => a.created_at.localeCompare(b.created_at));
  }

  async addFilterValues(linkId: string, tokenHash: string, values: { channels: string[]; directions: string[] }): Promise<void> {
    await this.faults.enter('addFilterValues');
    for (const item of [this.links.get(linkId), this.tokens.get(tokenHash)]) {
      if (!item) continue;
      for (const [attribute, list] of [
        ['channel_values', values.channels],
        ['direction_values', values.directions],
      ] as const) {
        if (list.length === 0) continue;
        const set = (item[attribute] ??= new Set());
        if (set.size >= MAX_FILTER_VALUES_PER_SOURCE) continue;
        for (const value of list) set.add(value);
      }
    }
  }

  /** Test helper: stores a link and its current token item, as `createLink` does, without the checks. */
  seed(link: Link): Link {
    this.links.set(link.link_id, { ...structuredClone(link), token_hashes: new Set([link.current_token_hash]) });
    this.tokens.set(link.current_token_hash, structuredClone(linkView(link)));
    return link;
  }
}

import type { Link } from '#inbound/link-model.ts';
import type { LinksRepository, TokenRecord } from '#inbound/links-repository.ts';
import { MAX_FILTER_VALUES_PER_SOURCE } from '#shared/limits.ts';
import { awsError, conditionFailed, Faults } from './faults.ts';
import type { InMemoryCounterStore } from './counter-store.ts';

/**
 * The links table in memory (`link#<id>` and `token#<hash>` items). `findTokenWithGuard` reads the guessing
 * counter from the counters fake, as the real BatchGetItem reads the counters table in the same round trip;
 * naming another counters table fails as DynamoDB would.
 */
export class InMemoryLinksRepository implements LinksRepository {
  readonly links = new Map<string, Link>();
  readonly tokens = new Map<string, TokenRecord>();
  readonly faults = new Faults<keyof LinksRepository>();

  constructor(
    private readonly counters: InMemoryCounterStore,
    readonly countersTable = 'counters',
  ) {}

  async findTokenWithGuard(tokenHash: string, countersTable: string, guardKey: string) {
    await this.faults.enter('findTokenWithGuard');
    if (countersTable !== this.countersTable) throw awsError('ResourceNotFoundException', `Requested resource not found: ${countersTable}`);
    const token = this.tokens.get(tokenHash);
    return { token: token ? structuredClone(token) : undefined, guessCount: this.counters.value(guardKey) };
  }

  async getLink(linkId: string): Promise<Link | undefined> {
    await this.faults.enter('getLink');
    const link = this.links.get(linkId);
    return link ? structuredClone(link) : undefined;
  }

  async createLink(link: Link): Promise<void> {
    await this.faults.enter('createLink');
    if (this.tokens.has(link.current_token_hash)) throw conditionFailed();
    this.tokens.set(link.current_token_hash, { link_id: link.link_id });
    if (this.links.has(link.link_id)) throw conditionFailed();
    this.links.set(link.link_id, structuredClone(link));
  }

  async bind(linkId: string, sourceId: string, boundAt: string): Promise<boolean> {
    await this.faults.enter('bind');
    const link = this.links.get(linkId);
    if (!link || link.state !== 'issued') return false;
    Object.assign(link, { state: 'bound', source_id: sourceId, bound_at: boundAt });
    return true;
  }

  async reissue(linkId: string, newTokenHash: string, tokenPrefix: string, reissuedAt: string, oldTokenValidUntil: number) {
    await this.faults.enter('reissue');
    if (this.tokens.has(newTokenHash)) throw conditionFailed();
    this.tokens.set(newTokenHash, { link_id: linkId });
    const link = this.links.get(linkId);
    if (!link || link.state === 'revoked') return undefined;
    const previous = structuredClone(link);
    Object.assign(link, { current_token_hash: newTokenHash, token_prefix: tokenPrefix, reissued_at: reissuedAt });
    const old = this.tokens.get(previous.current_token_hash);
    if (old && (old.valid_until_ms === undefined || old.valid_until_ms > oldTokenValidUntil)) old.valid_until_ms = oldTokenValidUntil;
    return { previous };
  }

  async revoke(linkId: string, revokedAt: string): Promise<boolean> {
    await this.faults.enter('revoke');
    const link = this.links.get(linkId);
    if (!link) return false;
    link.state = 'revoked';
    link.revoked_at ??= revokedAt;
    return true;
  }

  async listLinks(): Promise<Link[]> {
    await this.faults.enter('listLinks');
    return [...this.links.values()].map((link) => structuredClone(link)).sort((a, b) => a.created_at.localeCompare(b.created_at));
  }

  async addFilterValues(linkId: string, values: { channels: string[]; directions: string[] }): Promise<void> {
    await this.faults.enter('addFilterValues');
    const link = this.links.get(linkId);
    if (!link) return;
    for (const [attribute, list] of [['channel_values', values.channels], ['direction_values', values.directions]] as const) {
      if (list.length === 0) continue;
      const set = (link[attribute] ??= new Set());
      if (set.size >= MAX_FILTER_VALUES_PER_SOURCE) continue;
      for (const value of list) set.add(value);
    }
  }

  /** Test helper: stores a link and its current token item, as `createLink` does, without the checks. */
  seed(link: Link): Link {
    this.links.set(link.link_id, structuredClone(link));
    this.tokens.set(link.current_token_hash, { link_id: link.link_id });
    return link;
  }
}

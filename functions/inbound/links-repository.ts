import { GetCommand, PutCommand, UpdateCommand, paginateScan, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionHeld, ifConditionHolds } from '#shared/store/conditional-write.ts';
import { MAX_FILTER_VALUES_PER_SOURCE } from '#shared/limits.ts';
import { linkView, type Link, type LinkView } from './link-model.ts';
import { logger } from '#shared/lambda/powertools.ts';
import { DAY_MS, ttlSeconds } from '#shared/time.ts';

/**
 * Links table: `link#<id>` items hold the link and the hashes of its tokens (`token_hashes`); `token#<sha256>`
 * items point a token hash at its link and carry a copy of what a request needs of it (link-model.ts `LinkView`).
 * A reissued link has two token items until the old one's grace period ends. Token items written before the copy
 * existed hold only `link_id`; their requests read the link item.
 */
export interface TokenRecord extends Partial<Omit<LinkView, 'link_id'>> {
  link_id: string;
  /** Epoch ms after which this (reissued) token answers 404; absent for the current token. */
  valid_until_ms?: number;
  /** The same deadline under its name before stored time fields named their unit; read, never written. */
  valid_until?: number;
}

/** A token's deadline under either name (items written before the rename keep `valid_until` until they expire). */
export function tokenValidUntilMs(record: TokenRecord): number | undefined {
  return record.valid_until_ms ?? record.valid_until;
}

/** The token item's copy of its link, when it has one (the link's type is in every copy). */
export function tokenLinkView(record: TokenRecord): LinkView | undefined {
  return record.state && record.connector_type ? linkView(record as LinkView) : undefined;
}

const linkKey = (linkId: string) => ({ pk: `link#${linkId}` });
const tokenKey = (tokenHash: string) => ({ pk: `token#${tokenHash}` });
/** Every token a link has had that may still carry a copy (links from before `token_hashes` name only their current one). */
const tokenHashesOf = (link: Pick<Link, 'current_token_hash' | 'token_hashes'>) => [
  ...new Set([...(link.token_hashes ?? []), link.current_token_hash]),
];

export function createLinksRepository(client: DynamoDBDocumentClient, linksTable: string) {
  return {
    /** The token item (with its copy of the link), read eventually consistent: half a unit. */
    async findToken(tokenHash: string): Promise<TokenRecord | undefined> {
      const result = await client.send(new GetCommand({ TableName: linksTable, Key: tokenKey(tokenHash) }));
      return result.Item as TokenRecord | undefined;
    },

    async getLink(linkId: string): Promise<Link | undefined> {
      const result = await client.send(new GetCommand({ TableName: linksTable, Key: linkKey(linkId) }));
      return result.Item as Link | undefined;
    },

    async createLink(link: Link): Promise<void> {
      await client.send(
        new PutCommand({
          TableName: linksTable,
          Item: { ...tokenKey(link.current_token_hash), ...linkView(link) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      await client.send(
        new PutCommand({
          TableName: linksTable,
          Item: { ...linkKey(link.link_id), ...link, token_hashes: new Set([link.current_token_hash]) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    },

    /**
     * Moves issued → bound; answers false when the link is missing or not in state issued. The link item decides;
     * the tokens' copies follow. A copy left saying issued only costs its requests a read of the link item.
     */
    async bind(linkId: string, sourceId: string, boundAt: string): Promise<boolean> {
      const result = await ifConditionHolds(
        client.send(
          new UpdateCommand({
            TableName: linksTable,
            Key: linkKey(linkId),
            UpdateExpression: 'SET #state = :bound, source_id = :source, bound_at = :at',
            ConditionExpression: '#state = :issued',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':bound': 'bound', ':issued': 'issued', ':source': sourceId, ':at': boundAt },
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      if (!result) return false;
      // Only a copy that still says issued: one a revocation reached meanwhile stays revoked.
      await copyToTokens(
        tokenHashesOf(result.Attributes as Link),
        'SET #state = :bound, source_id = :source',
        { ':bound': 'bound', ':source': sourceId },
        'issued',
      ).catch((error: unknown) => logger.warn('bound, but a token copy still says issued', { linkId, error: error as Error }));
      return true;
    },

    /**
     * Points the link at a new token and gives the old one a deadline. Ordered single-item writes:
     * the new token exists before the link names it, so a failure half-way never locks a sender out.
     */
    async reissue(link: Link, newTokenHash: string, tokenPrefix: string, reissuedAt: string, oldTokenValidUntil: number) {
      const linkId = link.link_id;
      await client.send(
        new PutCommand({
          TableName: linksTable,
          Item: { ...tokenKey(newTokenHash), ...linkView(link) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      const result = await ifConditionHolds(
        client.send(
          new UpdateCommand({
            TableName: linksTable,
            Key: linkKey(linkId),
            UpdateExpression: 'SET current_token_hash = :hash, token_prefix = :prefix, reissued_at = :at ADD token_hashes :hashes',
            ConditionExpression: 'attribute_exists(pk) AND #state <> :revoked',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: {
              ':hash': newTokenHash,
              ':hashes': new Set([newTokenHash]),
              ':prefix': tokenPrefix,
              ':at': reissuedAt,
              ':revoked': 'revoked',
            },
            ReturnValues: 'ALL_OLD',
          }),
        ),
      );
      if (!result) {
        // Revoked meanwhile: the new token's copy was written before, so it says so now.
        await revokeCopies([newTokenHash]);
        return undefined;
      }
      const previous = result.Attributes as Link;
      // A token already in an earlier grace period keeps its earlier deadline.
      await conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: linksTable,
            Key: tokenKey(previous.current_token_hash),
            UpdateExpression: 'SET valid_until_ms = :until, expires_at = :expires REMOVE valid_until',
            ConditionExpression:
              '(attribute_not_exists(valid_until_ms) OR valid_until_ms > :until) AND (attribute_not_exists(valid_until) OR ' +
              'valid_until > :until)',
            ExpressionAttributeValues: { ':until': oldTokenValidUntil, ':expires': ttlSeconds(oldTokenValidUntil + DAY_MS) },
          }),
        ),
      );
      return { previous };
    },

    /**
     * Revokes the link: the tokens' copies first, so no request is accepted once the link says revoked, then the
     * link item, then every copy again (a token a reissue added in between; a copy a bind rewrote meanwhile, though a
     * bind only rewrites a copy that says issued, and a reissue or bind after the link says revoked is refused).
     * Safe to repeat.
     */
    async revoke(linkId: string, revokedAt: string): Promise<boolean> {
      const before = await this.getLink(linkId);
      if (!before) return false;
      await revokeCopies(tokenHashesOf(before));
      const result = await ifConditionHolds(
        client.send(
          new UpdateCommand({
            TableName: linksTable,
            Key: linkKey(linkId),
            UpdateExpression: 'SET #state = :revoked, revoked_at = if_not_exists(revoked_at, :at)',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':revoked': 'revoked', ':at': revokedAt },
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      if (!result) return false;
      await revokeCopies(tokenHashesOf(result.Attributes as Link));
      return true;
    },

    async listLinks(): Promise<Link[]> {
      const links: Link[] = [];
      const pages = paginateScan(
        { client },
        {
          TableName: linksTable,
          FilterExpression: 'begins_with(pk, :prefix)',
          ExpressionAttributeValues: { ':prefix': 'link#' },
        },
      );
      for await (const page of pages) links.push(...((page.Items ?? []) as Link[]));
      return links.sort((a, b) => a.created_at.localeCompare(b.created_at));
    },

    /**
     * Remembers new Channel / Direction filter values; capped so a noisy sender cannot grow the item without end.
     * The request's token copy learns them too, so its next requests do not write them again.
     */
    async addFilterValues(linkId: string, tokenHash: string, values: { channels: string[]; directions: string[] }): Promise<void> {
      const sets = [
        ['channel_values', values.channels],
        ['direction_values', values.directions],
      ] as const;
      await Promise.all(
        sets
          .filter(([, list]) => list.length > 0)
          .flatMap(([attribute, list]) =>
            [linkKey(linkId), tokenKey(tokenHash)].map((key) =>
              conditionHeld(
                client.send(
                  new UpdateCommand({
                    TableName: linksTable,
                    Key: key,
                    UpdateExpression: `ADD ${attribute} :values`,
                    ConditionExpression: `attribute_exists(pk) AND (attribute_not_exists(${attribute}) OR size(${attribute}) < :max)`,
                    ExpressionAttributeValues: { ':values': new Set(list), ':max': MAX_FILTER_VALUES_PER_SOURCE },
                  }),
                ),
              ),
            ),
          ),
      );
    },
  };

  function revokeCopies(tokenHashes: string[]): Promise<void> {
    return copyToTokens(tokenHashes, 'SET #state = :revoked', { ':revoked': 'revoked' });
  }

  /**
   * Applies `update` to each token item that carries a copy of its link (older token items have none to keep right),
   * and only where the copy is in state `onlyFrom` when one is named.
   */
  async function copyToTokens(
    tokenHashes: string[],
    update: string,
    values: Record<string, unknown>,
    onlyFrom?: Link['state'],
  ): Promise<void> {
    await Promise.all(
      tokenHashes.map((hash) =>
        conditionHeld(
          client.send(
            new UpdateCommand({
              TableName: linksTable,
              Key: tokenKey(hash),
              UpdateExpression: update,
              ConditionExpression: onlyFrom ? '#state = :from' : 'attribute_exists(#state)',
              ExpressionAttributeNames: { '#state': 'state' },
              ExpressionAttributeValues: onlyFrom ? { ...values, ':from': onlyFrom } : values,
            }),
          ),
        ),
      ),
    );
  }
}

export type LinksRepository = ReturnType<typeof createLinksRepository>;

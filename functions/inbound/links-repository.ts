import {
  GetCommand,
  PutCommand,
  UpdateCommand,
  paginateScan,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { batchGet } from '#shared/batch-get.ts';
import type { BatchRetryOptions } from '#shared/batch-retry.ts';
import { conditionHeld, ifConditionHolds } from '#shared/conditional-write.ts';
import { MAX_FILTER_VALUES_PER_SOURCE } from '#shared/limits.ts';
import type { Link } from './link-model.ts';
import { DAY_MS, ttlSeconds } from '#shared/time.ts';

/**
 * Links table: `link#<id>` items hold the link; `token#<sha256>` items point a token hash at its link.
 * A reissued link has two token items until the old one's grace period ends.
 */
export interface TokenRecord {
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

const linkKey = (linkId: string) => ({ pk: `link#${linkId}` });
const tokenKey = (tokenHash: string) => ({ pk: `token#${tokenHash}` });

export function createLinksRepository(client: DynamoDBDocumentClient, linksTable: string, batchRetry?: BatchRetryOptions) {
  return {
    /**
     * One round trip for the two reads every webhook request needs first: the token and the caller's guessing
     * counter. Keys DynamoDB leaves unprocessed are asked again; if they stay unprocessed this throws
     * BatchIncompleteError rather than answer a count it did not read (the guard fails closed).
     */
    async findTokenWithGuard(tokenHash: string, countersTable: string, guardKey: string) {
      const responses = await batchGet(
        client,
        {
          [linksTable]: { Keys: [tokenKey(tokenHash)] },
          [countersTable]: { Keys: [{ pk: guardKey }] },
        },
        batchRetry,
      );
      const token = responses.get(linksTable)?.[0] as TokenRecord | undefined;
      const guard = responses.get(countersTable)?.[0] as { count?: number } | undefined;
      return { token, guessCount: Number(guard?.count ?? 0) };
    },

    async getLink(linkId: string): Promise<Link | undefined> {
      const result = await client.send(new GetCommand({ TableName: linksTable, Key: linkKey(linkId) }));
      return result.Item as Link | undefined;
    },

    async createLink(link: Link): Promise<void> {
      await client.send(
        new PutCommand({
          TableName: linksTable,
          Item: { ...tokenKey(link.current_token_hash), link_id: link.link_id },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      await client.send(
        new PutCommand({
          TableName: linksTable,
          Item: { ...linkKey(link.link_id), ...link },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    },

    /** Moves issued → bound; answers false when the link is missing or not in state issued. */
    bind(linkId: string, sourceId: string, boundAt: string): Promise<boolean> {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: linksTable,
            Key: linkKey(linkId),
            UpdateExpression: 'SET #state = :bound, source_id = :source, bound_at = :at',
            ConditionExpression: '#state = :issued',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':bound': 'bound', ':issued': 'issued', ':source': sourceId, ':at': boundAt },
          }),
        ),
      );
    },

    /**
     * Points the link at a new token and gives the old one a deadline. Ordered single-item writes:
     * the new token exists before the link names it, so a failure half-way never locks a sender out.
     */
    async reissue(linkId: string, newTokenHash: string, tokenPrefix: string, reissuedAt: string, oldTokenValidUntil: number) {
      await client.send(
        new PutCommand({
          TableName: linksTable,
          Item: { ...tokenKey(newTokenHash), link_id: linkId },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      const result = await ifConditionHolds(
        client.send(
          new UpdateCommand({
            TableName: linksTable,
            Key: linkKey(linkId),
            UpdateExpression: 'SET current_token_hash = :hash, token_prefix = :prefix, reissued_at = :at',
            ConditionExpression: 'attribute_exists(pk) AND #state <> :revoked',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':hash': newTokenHash, ':prefix': tokenPrefix, ':at': reissuedAt, ':revoked': 'revoked' },
            ReturnValues: 'ALL_OLD',
          }),
        ),
      );
      if (!result) return undefined;
      const previous = result.Attributes as Link;
      // A token already in an earlier grace period keeps its earlier deadline.
      await conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: linksTable,
            Key: tokenKey(previous.current_token_hash),
            UpdateExpression: 'SET valid_until_ms = :until, expires_at = :expires REMOVE valid_until',
            ConditionExpression:
              '(attribute_not_exists(valid_until_ms) OR valid_until_ms > :until) AND (attribute_not_exists(valid_until) OR valid_until > :until)',
            ExpressionAttributeValues: { ':until': oldTokenValidUntil, ':expires': ttlSeconds(oldTokenValidUntil + DAY_MS) },
          }),
        ),
      );
      return { previous };
    },

    revoke(linkId: string, revokedAt: string): Promise<boolean> {
      return conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: linksTable,
            Key: linkKey(linkId),
            UpdateExpression: 'SET #state = :revoked, revoked_at = if_not_exists(revoked_at, :at)',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':revoked': 'revoked', ':at': revokedAt },
          }),
        ),
      );
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

    /** Remembers new Channel / Direction filter values; capped so a noisy sender cannot grow the item without end. */
    async addFilterValues(linkId: string, values: { channels: string[]; directions: string[] }): Promise<void> {
      const sets = [
        ['channel_values', values.channels],
        ['direction_values', values.directions],
      ] as const;
      await Promise.all(
        sets
          .filter(([, list]) => list.length > 0)
          .map(([attribute, list]) =>
            conditionHeld(
              client.send(
                new UpdateCommand({
                  TableName: linksTable,
                  Key: linkKey(linkId),
                  UpdateExpression: `ADD ${attribute} :values`,
                  ConditionExpression: `attribute_exists(pk) AND (attribute_not_exists(${attribute}) OR size(${attribute}) < :max)`,
                  ExpressionAttributeValues: { ':values': new Set(list), ':max': MAX_FILTER_VALUES_PER_SOURCE },
                }),
              ),
            ),
          ),
      );
    },
  };
}

export type LinksRepository = ReturnType<typeof createLinksRepository>;

import { randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import type { Link } from '#inbound/link-model.ts';
import { createLinksRepository } from '#inbound/links-repository.ts';
import { localTableName } from '#lib/twin/stores.ts';
import { useEmbeddedDynamo } from '../support/embedded-dynamo.ts';

/**
 * The token items' copies of their link against the embedded DynamoDB, with one write of an operation held back until
 * another operation has run: a revocation must win over a bind that overlaps it, whichever way they interleave.
 */
describe('links repository: bind and revoke overlapping', () => {
  const store = useEmbeddedDynamo('links-races');
  const table = localTableName('links');

  /** A client that holds back the writes `held` picks until `release()`. */
  function holdingClient(held: (command: unknown) => boolean) {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let heldCount = 0;
    const client = {
      send: async (command: unknown) => {
        if (held(command)) {
          heldCount += 1;
          await gate;
        }
        return store().send(command as UpdateCommand);
      },
    } as unknown as DynamoDBDocumentClient;
    return { client, release, held: () => heldCount };
  }

  const issuedLink = (): Link => ({
    link_id: `lnk_${randomUUID()}`,
    state: 'issued',
    connector_type: 'calls',
    allow_hosts: [],
    token_prefix: 'whk_',
    current_token_hash: randomUUID(),
    created_at: new Date().toISOString(),
  });
  const copyOf = async (hash: string) =>
    (await store().send(new GetCommand({ TableName: table, Key: { pk: `token#${hash}` }, ConsistentRead: true }))).Item;
  const isBindCopy = (command: unknown) =>
    command instanceof UpdateCommand &&
    String(command.input.UpdateExpression).includes(':bound') &&
    String((command.input.Key as { pk: string }).pk).startsWith('token#');

  it('keeps the copy revoked when a bind writes its copy after the revocation ended', async () => {
    const link = issuedLink();
    const plain = createLinksRepository(store(), table);
    await plain.createLink(link);
    const holding = holdingClient(isBindCopy);
    const binding = createLinksRepository(holding.client, table).bind(link.link_id, 'src_late', new Date().toISOString());
    while (holding.held() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await plain.revoke(link.link_id, new Date().toISOString())).toBe(true);
    holding.release();
    expect(await binding).toBe(true);
    expect(await copyOf(link.current_token_hash)).toMatchObject({ state: 'revoked' });
  });

  it('revokes the copy again when a bind rewrites it between the revocation of the copies and of the link', async () => {
    const link = issuedLink();
    const plain = createLinksRepository(store(), table);
    await plain.createLink(link);
    // The revocation's write of the link item waits: meanwhile a bind (link still issued) runs to its end.
    const isLinkRevoke = (command: unknown) =>
      command instanceof UpdateCommand &&
      String((command.input.Key as { pk: string }).pk).startsWith('link#') &&
      String(command.input.UpdateExpression).includes(':revoked');
    const holding = holdingClient(isLinkRevoke);
    const revoking = createLinksRepository(holding.client, table).revoke(link.link_id, new Date().toISOString());
    while (holding.held() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // The copy says revoked already, so the bind's copy write (issued copies only) leaves it.
    expect(await plain.bind(link.link_id, 'src_between', new Date().toISOString())).toBe(true);
    expect(await copyOf(link.current_token_hash)).toMatchObject({ state: 'revoked' });
    holding.release();
    expect(await revoking).toBe(true);
    expect(await copyOf(link.current_token_hash)).toMatchObject({ state: 'revoked' });
    expect(await plain.getLink(link.link_id)).toMatchObject({ state: 'revoked' });
  });
});

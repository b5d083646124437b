import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NormalizedConversation } from '#collection/conversation.ts';
import { createCollectionRepository } from '#collection/collection-repository.ts';
import { CollectionFailure, collectUntil, sweepTask, type CollectionDeps } from '#collection/collection-service.ts';
import { createHandoffStore, fileAnnouncer, handoffKey } from '#collection/handoff-store.ts';
import { createQueueRepository } from '#collection/queue-repository.ts';
import { parseAcceptedBody } from '#inbound/event-schema.ts';
import { createEventsRepository } from '#inbound/events-repository.ts';
import { newStoredEvent, packBody, type StoredEvent } from '#inbound/stored-event.ts';
import type { Link } from '#inbound/link-model.ts';
import { MAX_DELIVERY_FAILURES_PER_EVENT, QUEUE_RETENTION_MS } from '#shared/limits.ts';
import { LOCAL_BUCKET, LOCAL_CREDENTIALS, LOCAL_REGION, localTableName, startLocalStores, type LocalStores } from '#lib/twin/stores.ts';
import { callEvent, textEvent } from '../support/events.ts';

/**
 * The collection sweep against the embedded DynamoDB and S3 (the real queue, checkpoints and hand-off objects),
 * with the recording fetch as a seam: each test says what the sender's server answers.
 */
let dataDir: string;
let stores: LocalStores;
let dynamo: DynamoDBDocumentClient;
let s3: S3Client;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'collection-'));
  stores = await startLocalStores(dataDir, { dynamodb: 0, s3: 0 });
  dynamo = DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: stores.dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
    {
      marshallOptions: { removeUndefinedValues: true },
    },
  );
  s3 = new S3Client({ endpoint: stores.s3Endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, forcePathStyle: true });
});
afterAll(async () => {
  dynamo?.destroy();
  s3?.destroy();
  await stores?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

let sequence = 0;

/** The conversations the store reads back for a source, in its order (oldest event first). */
async function readBack(handoffs: ReturnType<typeof createHandoffStore>, sourceId: string): Promise<NormalizedConversation[]> {
  const conversations: NormalizedConversation[] = [];
  for await (const handoff of handoffs.read(sourceId)) conversations.push(JSON.parse(handoff.text) as NormalizedConversation);
  return conversations;
}
const NIGHT = Date.parse('2026-11-21T21:00:00.000Z');

function setup(options: { recording?: (url: string) => Promise<{ bytes: number; sha256: string }> } = {}) {
  sequence += 1;
  const link: Link = {
    link_id: `lnk_${sequence}`,
    state: 'bound',
    connector_type: 'calls',
    source_id: `src_${sequence}`,
    allow_hosts: [],
    token_prefix: 'whk_x',
    current_token_hash: 'h',
    created_at: new Date(NIGHT).toISOString(),
  };
  const clock = { now: NIGHT };
  const announcements = join(dataDir, `handoffs-${sequence}.jsonl`);
  const handoffs = createHandoffStore(s3, LOCAL_BUCKET, fileAnnouncer(announcements));
  const fetched: string[] = [];
  const deps: CollectionDeps = {
    tasks: createCollectionRepository(dynamo, localTableName('collection')),
    links: { getLink: async (id) => (id === link.link_id ? link : undefined) },
    queue: createQueueRepository(dynamo, localTableName('inboundEvents')),
    bodies: {
      get: async () => {
        throw new Error('no large bodies here');
      },
    },
    recordings: {
      fetch: async (url, key) => {
        fetched.push(url);
        expect(key).toMatch(/^recordings\//);
        return (options.recording ?? (async () => ({ bytes: 3, sha256: 'abc' })))(url);
      },
    },
    handoffs,
    now: () => clock.now,
    sleep: async (ms) => void (clock.now += ms),
  };
  const events = createEventsRepository(dynamo, localTableName('inboundEvents'));
  let eventId = 0;
  /**
   * Stores `body` (the event, or its JSON text exactly as a sender wrote it) as ingest does once it has accepted it, at
   * `receivedAtMs`: the acceptance rules themselves are ingest's (test/service/ingest-service.test.ts).
   */
  const accept = async (body: object | string, receivedAtMs: number) => {
    eventId += 1;
    const raw = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const parsed = parseAcceptedBody(JSON.parse(raw.toString('utf8')));
    if (!parsed.ok) throw new Error(`not an event: ${JSON.stringify(parsed.issues)}`);
    const packed = packBody(raw, link.source_id!, eventId);
    expect(packed.object).toBeUndefined();
    const stored = newStoredEvent(parsed.event, { sourceId: link.source_id!, eventId }, packed, receivedAtMs);
    expect(await events.putIfNew(stored, receivedAtMs)).toEqual({ stored: true });
    return stored;
  };
  const task = async (extra: { channels?: string[]; directions?: string[]; kind?: 'periodic' | 'once' } = {}) => {
    const taskId = `task_${sequence}_${Math.random().toString(36).slice(2, 8)}`;
    await deps.tasks.createTask({
      task_id: taskId,
      link_id: link.link_id,
      kind: extra.kind ?? 'periodic',
      channels: extra.channels ?? [],
      directions: extra.directions ?? [],
      created_at: new Date(NIGHT).toISOString(),
    });
    return taskId;
  };
  const stateOf = async (stored: StoredEvent) => (await deps.queue.get(stored))!;
  const announced = () => {
    try {
      return readFileSync(announcements, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
    } catch {
      return [];
    }
  };
  return { deps, link, clock, accept, task, stateOf, announced, fetched, handoffs };
}

describe('a collection sweep', () => {
  it('hands off the queued events received before it started, normalized, each once, and leaves later ones for the next sweep', async () => {
    const env = setup();
    const dialog = await env.accept(textEvent(3), NIGHT - 60_000);
    const call = await env.accept(callEvent({ source_channel: 'sip' }), NIGHT - 30_000);
    const later = await env.accept(callEvent(), NIGHT + 1);
    const taskId = await env.task();

    const summary = await sweepTask(env.deps, taskId, 'night-1');
    expect(summary).toMatchObject({
      task_id: taskId,
      sweep_id: 'night-1',
      handed_off: 2,
      failed: 0,
      filtered: 0,
      pending: 0,
      started_at: new Date(NIGHT).toISOString(),
    });
    expect((await env.stateOf(dialog)).state).toBe('handed_off');
    expect((await env.stateOf(call)).state).toBe('handed_off');
    expect((await env.stateOf(later)).state).toBe('queued');

    const conversations = await readBack(env.handoffs, env.link.source_id!);
    expect(conversations.map((c) => [c.event_id, c.type])).toEqual([
      [1, 'text'],
      [2, 'call'],
    ]);
    expect(conversations[0]!.messages!.map((m) => m.sequence_number)).toEqual([1, 2, 3]);
    expect(conversations[1]).toMatchObject({
      link_id: env.link.link_id,
      source_channel: 'sip',
      recording: { key: `recordings/${env.link.source_id}/2.mp3`, bytes: 3, sha256: 'abc', format: 'mp3' },
    });
    expect(
      env
        .announced()
        .map((line) => line.detail.key)
        .sort(),
    ).toEqual([`handoff/${env.link.source_id}/1.json`, `handoff/${env.link.source_id}/2.json`]);

    // The same sweep again answers its summary and does nothing; the next night takes the later event only.
    expect(await sweepTask(env.deps, taskId, 'night-1')).toEqual(summary);
    env.clock.now += 24 * 3_600_000;
    expect(await sweepTask(env.deps, taskId, 'night-2')).toMatchObject({ handed_off: 1 });
    expect(env.announced()).toHaveLength(3);
    expect((await env.deps.tasks.getTask(taskId))!.last_sweep).toMatchObject({ sweep_id: 'night-2', handed_off: 1 });
  });

  it('applies the channel and direction filters at collection time, leaving filtered events queued', async () => {
    const env = setup();
    await env.accept(callEvent({ source_channel: 'sip', metadata: { direction: 'inbound' } }), NIGHT - 3000);
    await env.accept(callEvent({ source_channel: 'sip', metadata: { direction: 'outbound' } }), NIGHT - 2000);
    const other = await env.accept(callEvent({ source_channel: 'web', metadata: { direction: 'inbound' } }), NIGHT - 1000);
    const summary = await sweepTask(env.deps, await env.task({ channels: ['sip'], directions: ['inbound'] }), 'r');
    expect(summary).toMatchObject({ handed_off: 1, filtered: 2 });
    expect((await env.stateOf(other)).state).toBe('queued');
    expect(env.fetched).toHaveLength(1);
  });

  it('collects nothing for a one-off task of a webhook source', async () => {
    const env = setup();
    await env.accept(callEvent(), NIGHT - 1000);
    expect(await sweepTask(env.deps, await env.task({ kind: 'once' }), 'r')).toMatchObject({
      handed_off: 0,
      failed: 0,
      filtered: 0,
      pending: 0,
    });
    expect(env.fetched).toEqual([]);
  });

  it('retries a failed recording in the sweep and on later nights, counting each failure, and abandons it at the fifth', async () => {
    const env = setup({
      recording: async () => {
        throw new CollectionFailure('HTTP 404');
      },
    });
    const call = await env.accept(callEvent(), NIGHT - 1000);
    const taskId = await env.task();
    const nights: unknown[] = [];
    for (let night = 1; night <= 3; night++) {
      nights.push(await sweepTask(env.deps, taskId, `night-${night}`));
      env.clock.now += 24 * 3_600_000;
    }
    expect(nights).toMatchObject([
      { failed: 1, pending: 1 },
      { failed: 1, pending: 1 },
      { failed: 1, pending: 0 },
    ]);
    expect(await env.stateOf(call)).toMatchObject({
      state: 'abandoned',
      delivery_failures: MAX_DELIVERY_FAILURES_PER_EVENT,
      last_error: 'HTTP 404',
    });
    expect(env.fetched).toHaveLength(5);
    // Abandoned: never fetched again.
    expect(await sweepTask(env.deps, taskId, 'night-4')).toMatchObject({ failed: 0 });
    expect(env.fetched).toHaveLength(5);
    expect(env.announced()).toEqual([]);
  });

  it('hands off a flaky recording once, on the try that works', async () => {
    let tries = 0;
    const env = setup({
      recording: async () => {
        tries += 1;
        if (tries < 3) throw new CollectionFailure('timed out');
        return { bytes: 9, sha256: 'ok' };
      },
    });
    const call = await env.accept(callEvent(), NIGHT - 1000);
    const taskId = await env.task();
    expect(await sweepTask(env.deps, taskId, 'n1')).toMatchObject({ handed_off: 0, failed: 1, pending: 1 });
    env.clock.now += 24 * 3_600_000;
    expect(await sweepTask(env.deps, taskId, 'n2')).toMatchObject({ handed_off: 1, failed: 0 });
    expect(await env.stateOf(call)).toMatchObject({ state: 'handed_off', delivery_failures: 2 });
    expect(env.announced()).toHaveLength(1);
  });

  it('never hands an event off twice when two sweeps overlap, and lets a sweep resume its own claims', async () => {
    const env = setup();
    for (let i = 0; i < 30; i++) await env.accept(textEvent(1), NIGHT - 10_000 + i);
    const taskId = await env.task();
    const [first, second] = await Promise.all([sweepTask(env.deps, taskId, 'a'), sweepTask(env.deps, taskId, 'b')]);
    expect(first.handed_off + second.handed_off).toBe(30);
    expect(env.announced()).toHaveLength(30);
    expect(new Set(env.announced().map((line) => line.detail.key)).size).toBe(30);
  });

  it('resumes a sweep killed in the middle from its checkpoint, handing every event off exactly once', async () => {
    const env = setup();
    for (let i = 0; i < 450; i++) await env.accept(textEvent(1), NIGHT - 100_000 + i);
    const taskId = await env.task();
    // The process dies (an error that is not the sender's) after some hand-offs, in the second page.
    const original = env.deps.handoffs;
    const handOff = (conversation: Parameters<typeof original.handOff>[0]) => original.handOff(conversation);
    let handed = 0;
    env.deps.handoffs = {
      handOff: async (conversation) => {
        if (++handed === 260) throw new Error('Runtime.ExitError');
        return handOff(conversation);
      },
    };
    await expect(sweepTask(env.deps, taskId, 'night')).rejects.toThrow('Runtime.ExitError');
    // Every hand-off before the failure is counted, the second page's too (not only the first page's 200).
    const checkpoint = await env.deps.tasks.getSweep(taskId, 'night');
    expect(checkpoint!.handed_off).toBeGreaterThan(200);
    expect(checkpoint).toMatchObject({ finished_at: null, handed_off: env.announced().length });

    env.deps.handoffs = { handOff };
    const summary = await sweepTask(env.deps, taskId, 'night');
    expect(summary.finished_at).not.toBeNull();
    expect(summary).toMatchObject({ handed_off: 450, failed: 0 });
    const keys = env.announced().map((line) => line.detail.key as string);
    // Every event once; the one the crash hit (claimed, not announced) is handed off by the resumed sweep.
    expect(new Set(keys).size).toBe(450);
    expect(keys).toHaveLength(450);
  });

  it('stops starting events at its deadline even inside a page, and the next batch resumes after the last one it started', async () => {
    // Each recording takes 100 s: a page of 30 would outlast the batch.
    const env = setup({
      recording: async () => {
        env.clock.now += 100_000;
        return { bytes: 3, sha256: 'abc' };
      },
    });
    for (let i = 0; i < 30; i++)
      await env.accept(callEvent({ audio: { url: `https://records.example.com/calls/${i}.mp3`, format: 'mp3' } }), NIGHT - 10_000 + i);
    const taskId = await env.task();

    const first = await collectUntil(env.deps, taskId, 'night', NIGHT + 1_000_000);
    expect(first.done).toBe(false);
    const started = env.fetched.length;
    expect(started).toBeGreaterThanOrEqual(10);
    expect(started).toBeLessThan(30);
    // Every event it started was finished and counted, and the checkpoint says so.
    expect(first.summary).toMatchObject({ handed_off: started, failed: 0 });
    expect(await env.deps.tasks.getSweep(taskId, 'night')).toMatchObject({ handed_off: started, finished_at: null });

    const second = await collectUntil(env.deps, taskId, 'night', Number.POSITIVE_INFINITY);
    expect(second.done).toBe(true);
    expect(second.summary).toMatchObject({ handed_off: 30, failed: 0 });
    expect(new Set(env.fetched).size).toBe(30);
    expect(env.fetched).toHaveLength(30);
  });

  it('hands metadata on as the sender wrote it: numbers past double precision are not rounded', async () => {
    const env = setup();
    const text = JSON.stringify(textEvent(1, { metadata: { big: 0, n: 0, nested: { x: 0 } } }))
      .replace('"big":0', '"big":12345678901234567890123')
      .replace('"n":0', '"n":9007199254740993')
      .replace('"x":0', '"x":1.00000000000000000001');
    const stored = await env.accept(text, NIGHT - 1000);
    expect(await sweepTask(env.deps, await env.task(), 'r')).toMatchObject({ handed_off: 1 });

    const object = await s3.send(
      new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: handoffKey({ source_id: stored.source_id, event_id: stored.event_id }) }),
    );
    const handedOn = await object.Body!.transformToString();
    expect(handedOn).toContain('"metadata":{"big":12345678901234567890123,"n":9007199254740993,"nested":{"x":1.00000000000000000001}}');
    expect(JSON.parse(handedOn)).toMatchObject({ type: 'text', external_id: stored.external_id, messages: [expect.any(Object)] });
  });

  it('hands an event off with occurred_at as sent when it has left the acceptance window since it was accepted', async () => {
    const env = setup();
    // Accepted 364 days after it occurred (inside the window then); at the sweep, 367 days after.
    const occurredAt = '2025-11-20T00:00:00+03:00';
    const stored = await env.accept(callEvent({ occurred_at: occurredAt }), NIGHT - 3 * 86_400_000);

    expect(await sweepTask(env.deps, await env.task(), 'r')).toMatchObject({ handed_off: 1, failed: 0 });

    const [handedOff] = await readBack(env.handoffs, env.link.source_id!);
    expect(handedOff).toMatchObject({ event_id: stored.event_id, occurred_at: occurredAt });
    expect((await env.stateOf(stored)).state).toBe('handed_off');
  });

  it('neither tries again nor counts twice what a batch did before it failed: the retry goes on from there', async () => {
    const tries = new Map<string, number>();
    const env = setup({
      recording: async (url) => {
        tries.set(url, (tries.get(url) ?? 0) + 1);
        // The sender's server refuses the first recording; the second one's first fetch fails the batch (not the sender's fault).
        if (url.endsWith('/0.mp3')) throw new CollectionFailure('HTTP 404');
        if (url.endsWith('/1.mp3') && tries.get(url) === 1) throw new Error('Runtime.ExitError');
        return { bytes: 3, sha256: 'abc' };
      },
    });
    for (let i = 0; i < 6; i++)
      await env.accept(
        callEvent({ source_channel: 'web', audio: { url: `https://records.example.com/calls/${i}.mp3`, format: 'mp3' } }),
        NIGHT - 10_000 + i,
      );
    // Filtered: it stays queued, and the retry meets it again.
    await env.accept(callEvent({ source_channel: 'sip' }), NIGHT - 10_000 + 6);
    const taskId = await env.task({ channels: ['web'] });

    await expect(sweepTask(env.deps, taskId, 'n')).rejects.toThrow('Runtime.ExitError');
    expect(await env.deps.tasks.getSweep(taskId, 'n')).toMatchObject({
      handed_off: 4,
      failed: 1,
      pending: 1,
      filtered: 0,
      finished_at: null,
    });

    const summary = await sweepTask(env.deps, taskId, 'n');
    expect(summary).toMatchObject({ handed_off: 5, failed: 1, pending: 1, filtered: 1 });
    // The refused recording had its two tries of this sweep, not four.
    expect(tries.get('https://records.example.com/calls/0.mp3')).toBe(2);
    expect(env.announced()).toHaveLength(5);
  });

  it('hands each event off once when two tasks of a link are swept the same night (one sweep id for every task)', async () => {
    const env = setup();
    for (let i = 0; i < 40; i++) await env.accept(textEvent(1), NIGHT - 10_000 + i);
    const [first, second] = [await env.task(), await env.task()];
    const [a, b] = await Promise.all([sweepTask(env.deps, first, 'night-x'), sweepTask(env.deps, second, 'night-x')]);
    expect(a.handed_off + b.handed_off).toBe(40);
    expect(env.announced()).toHaveLength(40);
  });

  it('keeps an event to its tries per sweep when another sweep tried it in between', async () => {
    const tries = new Map<string, number>();
    let failBatch = true;
    const env = setup({
      recording: async (url) => {
        tries.set(url, (tries.get(url) ?? 0) + 1);
        if (url.endsWith('/0.mp3')) throw new CollectionFailure('HTTP 404');
        if (url.endsWith('/1.mp3') && failBatch) throw new Error('Runtime.ExitError');
        return { bytes: 3, sha256: 'abc' };
      },
    });
    for (let i = 0; i < 2; i++)
      await env.accept(callEvent({ audio: { url: `https://records.example.com/calls/${i}.mp3`, format: 'mp3' } }), NIGHT - 10_000 + i);
    const taskId = await env.task();
    await expect(sweepTask(env.deps, taskId, 'a')).rejects.toThrow('Runtime.ExitError');
    // A manual sweep tries the refused recording meanwhile (and the failed batch's claim has gone stale).
    env.clock.now += 16 * 60_000;
    failBatch = false;
    expect(await sweepTask(env.deps, taskId, 'b')).toMatchObject({ failed: 1, handed_off: 1 });

    expect(await sweepTask(env.deps, taskId, 'a')).toMatchObject({ failed: 1, pending: 1 });
    // Two tries in sweep a, two in sweep b: a's retry did not try it again.
    expect(tries.get('https://records.example.com/calls/0.mp3')).toBe(4);
  });

  it('counts a stored event that no longer reads against the event, and the sweep goes on with the others', async () => {
    const env = setup();
    const broken = await env.accept(textEvent(1), NIGHT - 2000);
    await env.accept(textEvent(1), NIGHT - 1000);
    await dynamo.send(
      new UpdateCommand({
        TableName: localTableName('inboundEvents'),
        Key: { source_id: broken.source_id, external_id: broken.external_id },
        UpdateExpression: 'SET body_gzip = :junk',
        ExpressionAttributeValues: { ':junk': gzipSync('{"type":"text"') },
      }),
    );
    const taskId = await env.task();

    expect(await sweepTask(env.deps, taskId, 'n1')).toMatchObject({ handed_off: 1, failed: 1, pending: 1 });
    expect(await env.stateOf(broken)).toMatchObject({
      state: 'queued',
      delivery_failures: 2,
      last_error: expect.stringContaining('stored body unreadable'),
    });
  });

  it('keeps the names tables deployed earlier hold: run_id, last_run, runs#<task_id>, handed_run and tried_runs', async () => {
    const env = setup({
      recording: async (url) => {
        if (url.endsWith('/refused.mp3')) throw new CollectionFailure('HTTP 404');
        return { bytes: 3, sha256: 'abc' };
      },
    });
    const handed = await env.accept(callEvent(), NIGHT - 2000);
    const refused = await env.accept(callEvent({ audio: { url: 'https://records.example.com/refused.mp3', format: 'mp3' } }), NIGHT - 1000);
    const taskId = await env.task();
    const summary = await sweepTask(env.deps, taskId, 'night-1');
    expect(summary).toMatchObject({ sweep_id: 'night-1', handed_off: 1, failed: 1 });

    const item = async (table: Parameters<typeof localTableName>[0], key: Record<string, unknown>) =>
      (await dynamo.send(new GetCommand({ TableName: localTableName(table), Key: key }))).Item!;
    const checkpoint = await item('collection', { pk: `runs#${taskId}`, sk: 'night-1' });
    expect(checkpoint).toMatchObject({ run_id: 'night-1', handed_off: 1, cursor_key: expect.any(String) });
    expect(checkpoint.sweep_id).toBeUndefined();
    const task = await item('collection', { pk: 'tasks', sk: taskId });
    expect(task.last_run).toMatchObject({ run_id: 'night-1', handed_off: 1 });
    expect(task.last_sweep).toBeUndefined();
    expect(await item('inboundEvents', { source_id: handed.source_id, external_id: handed.external_id })).toMatchObject({
      state: 'handed_off',
      handed_run: `${taskId}/night-1`,
    });
    expect((await item('inboundEvents', { source_id: refused.source_id, external_id: refused.external_id })).tried_runs).toEqual(
      new Set([`${taskId}/night-1`]),
    );

    // Read back through the repository under today's names, as items written before the rename are.
    expect(await env.deps.tasks.getSweep(taskId, 'night-1')).toMatchObject({ sweep_id: 'night-1', handed_off: 1 });
    expect((await env.deps.tasks.getTask(taskId))!.last_sweep).toEqual(summary);
  });

  it('never hands off an expired event (TTL deletes late)', async () => {
    const env = setup();
    const old = await env.accept(textEvent(1), NIGHT - QUEUE_RETENTION_MS - 1000);
    expect(await sweepTask(env.deps, await env.task(), 'r')).toMatchObject({ handed_off: 0 });
    expect((await env.stateOf(old)).state).toBe('queued');
    expect(env.announced()).toEqual([]);
  });
});

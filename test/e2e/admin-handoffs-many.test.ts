import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NormalizedConversation } from '#collection/conversation.ts';
import { conversationJson, handoffKey } from '#collection/handoff-store.ts';
import { runCli } from '#lib/admin/cli.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * `admin handoffs` for a link with more hand-offs than one S3 listing page holds (1,000: S3 answers ListObjectsV2 "up
 * to 1,000" keys a page, docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html): the hand-offs are written
 * straight into the twin's S3 where and as the collection writes them, and read back through every page, in the CLI's
 * own process as an operator runs it (its answer written to stdout as it is read) and in this one.
 */
const COUNT = 2500;
const run = promisify(execFile);
/** The CLI in a process of its own starts npm and its bundle: seconds quiet, many more on a loaded machine. */
const CLI_PROCESS_TIMEOUT_MS = 180_000;
const ROOT = new URL('../..', import.meta.url).pathname;
/** The sender's metadata as it wrote it: a number past double precision, kept as text. */
const METADATA_JSON = '{"big":12345678901234567890123,"n":9007199254740993}';

const conformsToSchema = new Ajv2020({ allErrors: true }).compile(
  JSON.parse(readFileSync(new URL('../../functions/collection/conversation.schema.json', import.meta.url), 'utf8')) as object,
);

let twin: TestTwin;
let link: { linkId: string; sourceId: string };

function conversation(eventId: number, of = link): NormalizedConversation {
  return {
    event_id: eventId,
    external_id: `call-${eventId}`,
    source_id: of.sourceId,
    link_id: of.linkId,
    type: 'call',
    source_channel: 'sip',
    status: 'completed',
    metadata: { big: 0, n: 0 },
    occurred_at: '2026-11-20T10:00:00+03:00',
    recording: { key: `recordings/${of.sourceId}/${eventId}.mp3`, bytes: eventId, sha256: 'a'.repeat(64), format: 'mp3' },
    started_at: null,
    ended_at: null,
  };
}

beforeAll(async () => {
  twin = await startTestTwin();
  link = await boundLink(twin, 'calls');
  const BATCH = 50;
  for (let from = 1; from <= COUNT; from += BATCH) {
    const eventIds = Array.from({ length: Math.min(BATCH, COUNT - from + 1) }, (_, i) => from + i);
    await Promise.all(
      eventIds.map((eventId) =>
        twin.s3.send(
          new PutObjectCommand({
            Bucket: twin.twin.bucket,
            Key: handoffKey({ source_id: link.sourceId, event_id: eventId }),
            Body: conversationJson(conversation(eventId), METADATA_JSON),
            ContentType: 'application/json',
          }),
        ),
      ),
    );
  }
}, 120_000);
afterAll(async () => {
  await twin?.close();
});

/** What JSON.parse reads back: the same conversation, its metadata numbers rounded as JSON.parse rounds them. */
const expected = (eventId: number) => ({ ...conversation(eventId), metadata: JSON.parse(METADATA_JSON) as object });

describe(`admin handoffs for a link with ${COUNT.toLocaleString('en')} hand-offs`, () => {
  it(
    'prints every one, oldest event first, as one JSON object, from the CLI in its own process',
    async () => {
      const { stdout, stderr } = await run('npm', ['run', '--silent', 'admin', '--', 'handoffs', '--link', link.linkId, '--json'], {
        cwd: ROOT,
        env: { ...process.env, DATA_DIR: twin.dataDir },
        maxBuffer: 64 * 1024 * 1024,
      });
      expect(stderr).toBe('');
      expect(stdout.trim().split('\n')).toHaveLength(1);
      const { conversations } = JSON.parse(stdout) as { conversations: NormalizedConversation[] };
      expect(conversations).toHaveLength(COUNT);
      expect(conversations.map((handedOff) => handedOff.event_id)).toEqual(Array.from({ length: COUNT }, (_, i) => i + 1));
      for (const eventId of [1, 999, 1000, 1001, 2000, COUNT]) expect(conversations[eventId - 1]).toEqual(expected(eventId));
      expect(conformsToSchema(conversations[1500]), JSON.stringify(conformsToSchema.errors)).toBe(true);
      // The sender's numbers as it wrote them, in every conversation.
      expect(stdout.split(`"metadata":${METADATA_JSON}`)).toHaveLength(COUNT + 1);
    },
    CLI_PROCESS_TIMEOUT_MS,
  );

  it('says what it could not read: an error object before the first conversation, stdout cut short after it', async () => {
    const broken = await boundLink(twin, 'calls');
    const put = (eventId: number, body: string) =>
      twin.s3.send(
        new PutObjectCommand({ Bucket: twin.twin.bucket, Key: handoffKey({ source_id: broken.sourceId, event_id: eventId }), Body: body }),
      );
    await put(1, 'not json');
    const written: string[] = [];
    const io = { stdin: () => Promise.reject(new Error('no stdin')), stdout: async (piece: string) => void written.push(piece) };
    const unreadable = `handoff/${broken.sourceId}/1.json does not hold a conversation's JSON`;
    expect(await runCli(['handoffs', '--link', broken.linkId, '--json'], io)).toEqual({
      exitCode: 1,
      stdout: `${JSON.stringify({ error: unreadable })}\n`,
      stderr: `error: ${unreadable}\n`,
    });
    expect(written).toEqual([]);

    await put(1, conversationJson(conversation(1, broken), METADATA_JSON));
    await put(2, 'not json');
    const cut = await runCli(['handoffs', '--link', broken.linkId, '--json'], io);
    const stopped = `handoff/${broken.sourceId}/2.json does not hold a conversation's JSON`;
    expect(cut).toEqual({ exitCode: 1, stdout: '', stderr: `error: the answer on stdout stops short: ${stopped}\n` });
    expect(written.join('')).toBe(`{"conversations":[${conversationJson(conversation(1, broken), METADATA_JSON)}`);
  });

  it('lays every one out as JSON.stringify would, without --json', async () => {
    const text = await runCli(['handoffs', '--link', link.linkId]);
    expect(text.exitCode, text.stderr).toBe(0);
    const { conversations } = JSON.parse(text.stdout) as { conversations: NormalizedConversation[] };
    expect(conversations).toHaveLength(COUNT);
    expect(conversations[COUNT - 1]).toEqual(expected(COUNT));
    const rounded = (number: string) => `: ${JSON.stringify(JSON.parse(number))}`;
    const laidOut = JSON.stringify({ conversations }, null, 2)
      .replaceAll(rounded('12345678901234567890123'), ': 12345678901234567890123')
      .replaceAll(rounded('9007199254740993'), ': 9007199254740993');
    expect(text.stdout).toBe(`${laidOut}\n`);
  });
});

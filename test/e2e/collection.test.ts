import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import { executionArnOf } from '#shared/execution-arn.ts';
import { LOCAL_REGION } from '#lib/twin/stores.ts';
import { HANDOFF_EVENTS_FILE_NAME } from '#lib/twin/twin.ts';
import { boundLink, refusedAdmin, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { callEvent, textEvent } from '../support/events.ts';
import { postJson } from '../support/http.ts';
import { startRecordingServer, type RecordingServer } from '../support/https-recording-server.ts';

/**
 * The nightly collection end to end on the twin: tasks through the admin CLI, the sweep on the local collection state
 * machine (CollectBatch until done), recordings from a local HTTPS server (trusted through NODE_EXTRA_CA_CERTS, as any
 * Node process trusts a private CA), hand-offs in the local S3 and announced in a file under DATA_DIR.
 */
let twin: TestTwin;
let recordings: RecordingServer;
beforeAll(async () => {
  process.env.ALLOW_LOOPBACK_RECORDINGS = '1';
  // The 2-minute transfer limit, shortened for the hanging server below (it can only be shortened).
  process.env.RECORDING_TIMEOUT_MS = '700';
  twin = await startTestTwin();
  recordings = await startRecordingServer();
});
afterAll(async () => {
  await recordings?.close();
  await twin?.close();
});

/** The published format of a hand-off (functions/collection/README.md): every conversation handed off must match it. */
const conformsToSchema = new Ajv2020({ allErrors: true }).compile(
  JSON.parse(readFileSync(new URL('../../functions/collection/conversation.schema.json', import.meta.url), 'utf8')) as object,
);
const expectConforming = (conversation: unknown) => {
  const valid = conformsToSchema(conversation);
  expect(conformsToSchema.errors ?? [], JSON.stringify(conversation).slice(0, 300)).toEqual([]);
  expect(valid).toBe(true);
};

const eventsUrl = (token: string) => `${twin.webhookUrl}/api/v1/webhooks/${token}/events`;
const announced = () => {
  try {
    return readFileSync(join(twin.dataDir, HANDOFF_EVENTS_FILE_NAME), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
  } catch {
    return [];
  }
};

describe('nightly collection on the twin', () => {
  it('hands off accepted dialogs, normalized, through tasks create, collect, events and handoffs', async () => {
    const link = await boundLink(twin, 'dialogs');
    const dialog = textEvent(3, { source_channel: 'web' });
    expect((await postJson(eventsUrl(link.token), dialog)).status).toBe(201);

    const task = await twin.admin('tasks', 'create', '--link', link.linkId);
    expect(task).toEqual({ task_id: expect.stringMatching(/^tsk_/), link_id: link.linkId, kind: 'periodic', channels: [], directions: [] });
    const sweep = await twin.admin('collect', '--task', task.task_id);
    expect(sweep).toMatchObject({
      task_id: task.task_id,
      sweep_id: expect.stringMatching(/^manual-/),
      handed_off: 1,
      failed: 0,
      filtered: 0,
      pending: 0,
      finished_at: expect.any(String),
    });

    const { events } = await twin.admin('events', '--link', link.linkId);
    expect(events).toEqual([
      {
        event_id: expect.any(Number),
        external_id: dialog.external_id,
        type: 'text',
        state: 'handed_off',
        failures: 0,
        last_error: null,
        received_at: expect.any(String),
      },
    ]);
    const { conversations } = await twin.admin('handoffs', '--link', link.linkId);
    expect(conversations).toHaveLength(1);
    expectConforming(conversations[0]);
    // The schema bites: a dialog with a recording, or a message without its order, does not conform.
    expect(
      conformsToSchema({ ...conversations[0], recording: { key: 'recordings/x', bytes: 1, sha256: 'a'.repeat(64), format: 'mp3' } }),
    ).toBe(false);
    expect(conformsToSchema({ ...conversations[0], messages: [{ ...conversations[0].messages[0], sequence_number: undefined }] })).toBe(
      false,
    );
    expect(conversations[0]).toMatchObject({
      external_id: dialog.external_id,
      link_id: link.linkId,
      source_channel: 'web',
      type: 'text',
      recording: null,
    });
    expect(conversations[0].messages.map((m: { external_id: string }) => m.external_id)).toEqual(
      [1, 2, 3].map((n) => `${dialog.external_id}:${n}`),
    );
    expect(announced().filter((line) => line.detail.link_id === link.linkId)).toHaveLength(1);

    // The sweep was an execution of the collection state machine, never of the workflow one.
    const executionName = `collect-${task.task_id}-${sweep.sweep_id}`;
    expect(twin.stepFunctions.describeExecution(executionArnOf(twin.twin.collection_state_machine_arn, executionName))).toMatchObject({
      stateMachineArn: twin.twin.collection_state_machine_arn,
      status: 'SUCCEEDED',
      input: JSON.stringify({ task_id: task.task_id, sweep_id: sweep.sweep_id }),
    });
    expect(() => twin.stepFunctions.describeExecution(executionArnOf(twin.twin.state_machine_arn, executionName))).toThrow(
      /Execution Does Not Exist/,
    );

    const listed = await twin.admin('tasks', 'list', '--link', link.linkId);
    expect(listed.tasks).toEqual([
      expect.objectContaining({ task_id: task.task_id, last_sweep: expect.objectContaining({ sweep_id: sweep.sweep_id, handed_off: 1 }) }),
    ]);
    // Nothing new: a second sweep hands nothing off again.
    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ handed_off: 0 });
  });

  it('prints hand-offs as stored: metadata numbers past double precision as the sender wrote them, in JSON and as text', async () => {
    const link = await boundLink(twin, 'dialogs');
    const dialog = textEvent(1, { metadata: { big: 0, n: 0 } });
    // The sender's own layout around the metadata: the hand-off keeps its text, the listing lays it out.
    const body = JSON.stringify(dialog).replace('{"big":0,"n":0}', '{ "big" : 12345678901234567890123,\n "n": 9007199254740993 }');
    expect((await postJson(eventsUrl(link.token), body)).status).toBe(201);
    const task = await twin.admin('tasks', 'create', '--link', link.linkId);
    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ handed_off: 1 });

    const json = await runCli(['handoffs', '--link', link.linkId, '--json']);
    expect(json.exitCode, json.stderr).toBe(0);
    expect(json.stdout.trim().split('\n')).toHaveLength(1);
    expect(json.stdout).toContain('"metadata":{"big":12345678901234567890123,"n":9007199254740993}');
    const [conversation] = JSON.parse(json.stdout).conversations;
    expectConforming(conversation);
    expect(conversation).toMatchObject({ external_id: dialog.external_id, link_id: link.linkId, type: 'text' });

    const text = await runCli(['handoffs', '--link', link.linkId]);
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toContain('"metadata": {\n        "big": 12345678901234567890123,\n        "n": 9007199254740993\n      }');
    // Otherwise the same layout as any other command's: JSON.stringify's, with the sender's numbers put back.
    const rounded = (number: string) => `: ${JSON.stringify(JSON.parse(number))}`;
    const laidOut = JSON.stringify(JSON.parse(json.stdout), null, 2)
      .replace(rounded('12345678901234567890123'), ': 12345678901234567890123')
      .replace(rounded('9007199254740993'), ': 9007199254740993');
    expect(text.stdout).toBe(`${laidOut}\n`);
  });

  it('downloads a 2.5 MB recording byte for byte, with no credentials, and hands the call off with its SHA-256', async () => {
    const link = await boundLink(twin, 'calls');
    const size = 2.5 * 1024 * 1024;
    const file = recordings.file('/r/call-1.mp3', size);
    const call = callEvent({ audio: { url: `${recordings.url}/r/call-1.mp3?sig=abc%2Bdef&x=1`, format: 'mp3' } });
    expect((await postJson(eventsUrl(link.token), call)).status).toBe(201);

    const task = await twin.admin('tasks', 'create', '--link', link.linkId);
    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ handed_off: 1, failed: 0 });
    const [conversation] = (await twin.admin('handoffs', '--link', link.linkId)).conversations;
    expectConforming(conversation);
    expect(conversation.recording).toEqual({
      key: expect.stringMatching(/^recordings\/.+\.mp3$/),
      bytes: size,
      sha256: file.sha256,
      format: 'mp3',
    });
    const stored = await twin.s3.send(new GetObjectCommand({ Bucket: twin.twin.bucket, Key: conversation.recording.key }));
    const bytes = Buffer.from(await stored.Body!.transformToByteArray());
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(file.sha256);
    const request = recordings.requests.find((seen) => seen.path.startsWith('/r/call-1.mp3'))!;
    expect(request.path).toBe('/r/call-1.mp3?sig=abc%2Bdef&x=1');
    expect(request.headers.authorization).toBeUndefined();
    expect(request.headers.cookie).toBeUndefined();
  });

  it('counts a redirect (never followed) and a 404 as failures, filters by channel and direction, and leaves later events for the next sweep', async () => {
    const link = await boundLink(twin, 'calls');
    recordings.redirect('/r/moved.mp3', '/r/elsewhere.mp3');
    recordings.notFound('/r/missing.mp3');
    const moved = callEvent({
      source_channel: 'sip',
      metadata: { direction: 'inbound' },
      audio: { url: `${recordings.url}/r/moved.mp3`, format: 'mp3' },
    });
    const missing = callEvent({
      source_channel: 'sip',
      metadata: { direction: 'inbound' },
      audio: { url: `${recordings.url}/r/missing.mp3`, format: 'mp3' },
    });
    const outbound = callEvent({
      source_channel: 'sip',
      metadata: { direction: 'outbound' },
      audio: { url: `${recordings.url}/r/missing.mp3`, format: 'mp3' },
    });
    for (const event of [moved, missing, outbound]) expect((await postJson(eventsUrl(link.token), event)).status).toBe(201);

    const task = await twin.admin('tasks', 'create', '--link', link.linkId, '--channel', 'sip', '--direction', 'inbound');
    expect(task).toMatchObject({ channels: ['sip'], directions: ['inbound'] });
    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ handed_off: 0, failed: 2, pending: 2, filtered: 1 });
    expect(recordings.requests.some((seen) => seen.path === '/r/elsewhere.mp3')).toBe(false);

    const failed = (await twin.admin('events', '--link', link.linkId, '--state', 'queued')).events;
    expect(
      failed.map((event: { external_id: string; failures: number; last_error: string | null }) => [
        event.external_id,
        event.failures,
        event.last_error,
      ]),
    ).toEqual(
      expect.arrayContaining([
        [moved.external_id, 2, expect.stringMatching(/redirect/i)],
        [missing.external_id, 2, expect.stringMatching(/404/)],
        [outbound.external_id, 0, null],
      ]),
    );
  });

  it('counts a transfer that outlives the limit as a failure, hands a flaky link off once on a later night, and abandons at the fifth failure', async () => {
    const link = await boundLink(twin, 'calls');
    recordings.route('/r/hang.mp3', () => undefined);
    recordings.notFound('/r/gone.mp3');
    const hang = callEvent({ audio: { url: `${recordings.url}/r/hang.mp3`, format: 'mp3' } });
    const gone = callEvent({ audio: { url: `${recordings.url}/r/gone.mp3`, format: 'mp3' } });
    for (const event of [hang, gone]) expect((await postJson(eventsUrl(link.token), event)).status).toBe(201);
    const task = await twin.admin('tasks', 'create', '--link', link.linkId);

    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ handed_off: 0, failed: 2, pending: 2 });
    const afterFirst = (await twin.admin('events', '--link', link.linkId)).events;
    expect(afterFirst.find((event: { external_id: string }) => event.external_id === hang.external_id)).toMatchObject({
      state: 'queued',
      failures: 2,
      last_error: expect.stringMatching(/timed out/),
    });

    await twin.admin('collect', '--task', task.task_id);
    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ failed: 2, pending: 0 });
    const abandoned = (await twin.admin('events', '--link', link.linkId, '--state', 'abandoned')).events;
    expect(abandoned.map((event: { external_id: string; failures: number }) => [event.external_id, event.failures]).sort()).toEqual(
      [
        [hang.external_id, 5],
        [gone.external_id, 5],
      ].sort(),
    );
    const requestsBefore = recordings.requests.length;
    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ failed: 0, handed_off: 0 });
    expect(recordings.requests.length).toBe(requestsBefore);

    // A flaky link: two 503s, then two redirects (each a failure, never followed), then the file.
    let flakyTries = 0;
    recordings.route('/r/flaky.mp3', (_request, response) => {
      flakyTries += 1;
      if (flakyTries <= 4) {
        response.writeHead(flakyTries <= 2 ? 503 : 302, flakyTries <= 2 ? {} : { location: '/r/flaky-ok.mp3' }).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'audio/mpeg' }).end(Buffer.alloc(1000, 7));
    });
    const flaky = callEvent({ audio: { url: `${recordings.url}/r/flaky.mp3`, format: 'mp3' } });
    expect((await postJson(eventsUrl(link.token), flaky)).status).toBe(201);
    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ handed_off: 0, failed: 1, pending: 1 });
    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ handed_off: 0, failed: 1, pending: 1 });
    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ handed_off: 1, failed: 0 });
    const handedOff = (await twin.admin('events', '--link', link.linkId, '--state', 'handed_off')).events;
    expect(handedOff).toEqual([expect.objectContaining({ external_id: flaky.external_id, failures: 4 })]);
    expect(announced().filter((line) => line.detail.external_id === flaky.external_id)).toHaveLength(1);
    expect(recordings.requests.some((seen) => seen.path === '/r/flaky-ok.mp3')).toBe(false);
  });

  it('counts a recording link that now points at a blocked address as a failure, without connecting', async () => {
    const link = await boundLink(twin, 'calls');
    const call = callEvent({ audio: { url: `${recordings.url}/r/fine.mp3`, format: 'mp3' } });
    expect((await postJson(eventsUrl(link.token), call)).status).toBe(201);
    // As if the name had since moved to an internal address: the stored link now names one (the download checks again).
    const blocked = { ...call, audio: { url: 'https://10.255.255.1/r/fine.mp3', format: 'mp3' } };
    await twin.dynamo.send(
      new UpdateCommand({
        TableName: twin.twin.tables.inboundEvents,
        Key: { source_id: link.sourceId, external_id: call.external_id },
        UpdateExpression: 'SET body_gzip = :body',
        ExpressionAttributeValues: { ':body': gzipSync(JSON.stringify(blocked)) },
      }),
    );
    const task = await twin.admin('tasks', 'create', '--link', link.linkId);
    expect(await twin.admin('collect', '--task', task.task_id)).toMatchObject({ handed_off: 0, failed: 1, pending: 1 });
    const [event] = (await twin.admin('events', '--link', link.linkId)).events;
    expect(event).toMatchObject({ state: 'queued', failures: 2, last_error: 'host must be a public address' });
  });

  it('collects nothing for a one-off task, and refuses a task for an unknown link or bad dates', async () => {
    const link = await boundLink(twin, 'dialogs');
    expect((await postJson(eventsUrl(link.token), textEvent(1))).status).toBe(201);
    const once = await twin.admin(
      'tasks',
      'create',
      '--link',
      link.linkId,
      '--once',
      '--from',
      '2026-11-01T00:00:00Z',
      '--to',
      '2026-11-02T00:00:00Z',
    );
    expect(once).toMatchObject({ kind: 'once', from_iso: '2026-11-01T00:00:00.000Z', to_iso: '2026-11-02T00:00:00.000Z' });
    expect(await twin.admin('collect', '--task', once.task_id)).toMatchObject({ handed_off: 0, failed: 0, filtered: 0, pending: 0 });
    expect((await twin.admin('events', '--link', link.linkId, '--state', 'queued')).events).toHaveLength(1);

    expect((await refusedAdmin('tasks', 'create', '--link', 'lnk_nope')).error).toMatch(/not found/);
    expect(
      (await refusedAdmin('tasks', 'create', '--link', link.linkId, '--once', '--from', 'yesterday', '--to', '2026-11-02T00:00:00Z')).error,
    ).toMatch(/--from and --to/);
  });

  it('starts every periodic task at the nightly trigger, once per night however often it fires', async () => {
    const link = await boundLink(twin, 'dialogs');
    expect((await postJson(eventsUrl(link.token), textEvent(2))).status).toBe(201);
    const task = await twin.admin('tasks', 'create', '--link', link.linkId);
    // Before the night's sweep, the 04:00 check counts this task's sweep as late (the NightlySweepsLate alarm's metric).
    const early = (await twin.runNightly({ check: 'deadline' })) as { sweep_id: string; late: string[] };
    expect(early.late).toContain(task.task_id);
    const first = (await twin.runNightly()) as { sweep_id: string; started: string[] };
    const again = (await twin.runNightly()) as { sweep_id: string; started: string[] };
    expect(first.sweep_id).toMatch(/^night-\d{4}-\d{2}-\d{2}$/);
    expect(first.started).toContain(task.task_id);
    expect(again.sweep_id).toBe(first.sweep_id);
    // The night's sweep is one execution of the collection state machine, whichever trigger started it.
    const night = twin.stepFunctions.describeExecution(
      executionArnOf(twin.twin.collection_state_machine_arn, `collect-${task.task_id}-${first.sweep_id}`),
    );
    expect(night.stateMachineArn).toBe(twin.twin.collection_state_machine_arn);
    await expect
      .poll(async () => (await twin.admin('tasks', 'list', '--link', link.linkId)).tasks[0].last_sweep?.sweep_id, { timeout: 15_000 })
      .toBe(first.sweep_id);
    expect((await twin.admin('events', '--link', link.linkId, '--state', 'handed_off')).events).toHaveLength(1);
    expect(announced().filter((line) => line.detail.link_id === link.linkId)).toHaveLength(1);
    const checked = (await twin.runNightly({ check: 'deadline' })) as { sweep_id: string; late: string[] };
    expect(checked.sweep_id).toBe(first.sweep_id);
    expect(checked.late).not.toContain(task.task_id);
  });
});

describe('who may start collection sweeps on the twin', () => {
  /** What the front door answers a StartExecution signed with a function's own key: a refusal, or the stand-in's verdict on a bad input. */
  async function startAs(functionId: string, stateMachineArn: string): Promise<string> {
    const sfn = new SFNClient({
      endpoint: twin.twin.step_functions_endpoint,
      region: LOCAL_REGION,
      credentials: twin.credentialsOf(functionId),
      maxAttempts: 1,
    });
    try {
      // Input that is not JSON: a call the front door lets through is refused by the stand-in, so nothing starts.
      await sfn.send(new StartExecutionCommand({ stateMachineArn, input: 'not json' }));
      return 'started';
    } catch (error) {
      return (error as Error).name;
    } finally {
      sfn.destroy();
    }
  }

  it('lets the nightly trigger start executions of the collection state machine only', async () => {
    expect(await startAs('CollectionNightly', twin.twin.collection_state_machine_arn)).toBe('InvalidExecutionInput');
    expect(await startAs('CollectionNightly', twin.twin.state_machine_arn)).toBe('AccessDeniedException');
  });

  it('lets no API or workflow function start a collection sweep', async () => {
    for (const functionId of ['PublishedExecute', 'PublishedStopExecution', 'WorkflowExecutionEnded', 'WorkflowStep']) {
      expect(await startAs(functionId, twin.twin.collection_state_machine_arn), functionId).toBe('AccessDeniedException');
    }
    expect(await startAs('PublishedExecute', twin.twin.state_machine_arn)).toBe('InvalidExecutionInput');
  });
});

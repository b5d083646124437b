import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createClient } from '@hey-api/openapi-ts';
import { build } from 'esbuild';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPublishedTwin } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';

/**
 * The client @hey-api/openapi-ts generates (default plugins) from the 3.1 document the twin serves, fetched over HTTP
 * as a caller would, run against the twin: a streamed execution, its resume after Last-Event-ID, and the 204 after
 * its last event. What its SSE client yields for each event is the event's `data`; what `onSseEvent` gets is the
 * event, its name with it. Each is written out as a literal of its generated type and type-checked with `--strict`:
 * every item's fields, and every event's name with its data, are what the types say. The 204 ends the generator only
 * with the README's two lines (a `fetch` that answers it as an empty stream): without them the client retries.
 */

type Json = Record<string, any>;

interface GeneratedClient {
  client: { setConfig(config: Json): void };
  publishedStreamWorkflow: (options: Json) => Promise<{ stream: AsyncGenerator<unknown> }>;
  publishedStreamExecution: (options: Json) => Promise<{ stream: AsyncGenerator<unknown> }>;
}

let twin: TestTwin;
let dir: string;
let hey: GeneratedClient;

beforeAll(async () => {
  let key: string;
  ({ twin, key } = await startPublishedTwin());
  dir = mkdtempSync(join(tmpdir(), 'hey-api-client-'));
  await createClient({ input: `${twin.url}/api/v1/published/openapi-3.1.json`, output: join(dir, 'hey'), logs: { level: 'silent' } });
  // The generated sources import one another as `.js`; esbuild resolves that to their `.ts`, as a caller's bundler does.
  writeFileSync(join(dir, 'entry.ts'), "export * from './hey/sdk.gen.ts';\nexport { client } from './hey/client.gen.ts';\n");
  await build({
    entryPoints: [join(dir, 'entry.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    outfile: join(dir, 'hey.mjs'),
    logLevel: 'silent',
  });
  hey = (await import(pathToFileURL(join(dir, 'hey.mjs')).href)) as GeneratedClient;
  hey.client.setConfig({ baseUrl: `${twin.url}/api/v1/published`, auth: key });
}, 120_000);

afterAll(async () => {
  await twin?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const REPLY = 'one two three four';
const slowEcho = { user_id: 'hey-api', input: { message: 'hi' }, overrides: { answer: { reply: REPLY, token_delay_ms: 5 } } };

/** What a stream's generator yields, and what `onSseEvent` is handed, as the generated client does both. */
async function drain(start: (options: Json) => Promise<{ stream: AsyncGenerator<unknown> }>, options: Json) {
  const events: { event?: string; id?: string; data: unknown }[] = [];
  const errors: string[] = [];
  const { stream } = await start({
    ...options,
    onSseEvent: (event: { event?: string; id?: string; data: unknown }) => events.push(event),
    onSseError: (error: unknown) => errors.push(String(error)),
  });
  const items: unknown[] = [];
  for await (const item of stream) items.push(item);
  return { items, events, errors };
}

/** Type-checks `lines` against the generated types (`H`) with `--strict`; answers the compiler's complaints. */
function typeCheck(name: string, lines: string[]): string[] {
  const file = join(dir, `${name}.check.ts`);
  writeFileSync(file, ["import type * as H from './hey/types.gen.ts';", ...lines].join('\n'));
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    skipLibCheck: true,
    types: [],
  });
  return ts
    .getPreEmitDiagnostics(program)
    .map(
      (diagnostic) => `${diagnostic.file?.fileName.slice(dir.length + 1)} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`,
    );
}

/** Each yielded item as a literal of the stream's item type, each named event as a literal of its event union. */
function literals(prefix: string, itemType: string, eventType: string, drained: Awaited<ReturnType<typeof drain>>) {
  const named = drained.events.filter((event) => event.event !== undefined);
  return [
    ...drained.items.map((item, i) => `const ${prefix}Item${i}: ${itemType} = ${JSON.stringify(item)};`),
    ...named.map(
      (event, i) => `const ${prefix}Event${i}: ${eventType} = ${JSON.stringify({ event: event.event, id: event.id, data: event.data })};`,
    ),
  ];
}

describe('the hey-api client generated from the served 3.1 document, against the twin', () => {
  let run: Awaited<ReturnType<typeof drain>>;
  let resumed: Awaited<ReturnType<typeof drain>>;
  let executionId: string;

  beforeAll(async () => {
    run = await drain(hey.publishedStreamWorkflow, { path: { workflow_id: 'echo' }, body: slowEcho });
    executionId = (run.items[0] as { execution_id: string }).execution_id;
    resumed = await drain(hey.publishedStreamExecution, { path: { execution_id: executionId }, headers: { 'Last-Event-ID': '3' } });
  }, 60_000);

  it("yields each event's data, and hands each event with its name to onSseEvent", () => {
    const named = run.events.filter((event) => event.event !== undefined);

    expect(run.errors).toEqual([]);
    expect(named.map((event) => event.event)).toEqual([
      'start',
      'node_update',
      ...REPLY.split(' ').map(() => 'token'),
      'node_update',
      'node_update',
      'complete',
    ]);
    expect(named.map((event) => event.id)).toEqual(named.map((_, i) => String(i + 1)));
    expect(run.items).toEqual(named.map((event) => event.data));
    expect(run.items.at(-1)).toMatchObject({ execution_id: executionId, status: 'completed', output: REPLY });
    // A keep-alive comment reaches onSseEvent as an event with no name and no data.
    expect(run.events.filter((event) => event.event === undefined).every((event) => event.data === undefined)).toBe(true);
  });

  it('resumes after Last-Event-ID with the events that follow it, and nothing else', () => {
    const named = resumed.events.filter((event) => event.event !== undefined);

    expect(resumed.errors).toEqual([]);
    expect(named.map((event) => event.id)).toEqual(
      run.events
        .filter((event) => event.event !== undefined)
        .slice(3)
        .map((event) => event.id),
    );
    expect(resumed.items).toEqual(run.items.slice(3));
  });

  it('yields items, and hands over events, whose fields are what their generated types say', () => {
    const problems = typeCheck('stream', [
      ...literals('run', 'H.PublishedStreamWorkflowResponse', 'H.RunStreamEvent', run),
      ...literals('resumed', 'H.PublishedStreamExecutionResponse', 'H.RunStreamEvent', resumed),
      // An item is the event's data: a caller cannot test it for a name it does not carry.
      'declare const data: H.RunStreamEventData;',
      '// @ts-expect-error the data of an event has no `event`\nvoid data.event;',
    ]);

    expect(run.items.length + resumed.items.length).toBeGreaterThan(10);
    expect(problems).toEqual([]);
  });

  it("fails a literal that is not what the types say: an item typed as the event, or an event's data under another name", () => {
    const token = run.items[2];
    const problems = typeCheck('wrong', [
      `const asEvent: H.PublishedStreamWorkflowResponse = ${JSON.stringify({ event: 'token', id: '3', data: token })};`,
      `const misnamed: H.RunStreamEvent = ${JSON.stringify({ event: 'start', id: '1', data: token })};`,
    ]);

    expect(problems).toEqual([
      expect.stringMatching(/'"?event"?' does not exist in type 'RunStreamEventData'/),
      expect.stringMatching(/'"?content"?' does not exist in type 'StartEvent'/),
    ]);
  });

  it('ends at the 204 after the last event only with the two lines of the README; without them it retries', async () => {
    const lastEventId = run.events.filter((event) => event.event !== undefined).at(-1)!.id!;
    const sent: number[] = [];
    const counted = async (request: Request) => {
      const response = await fetch(request);
      sent.push(response.status);
      return response;
    };
    // functions/published/README.md, "Generated clients": hey-api.
    const endAt204 = async (request: Request) => {
      const response = await counted(request);
      return response.status === 204 ? new Response('') : response;
    };
    const at = { path: { execution_id: executionId }, headers: { 'Last-Event-ID': lastEventId } };

    const ended = await drain(hey.publishedStreamExecution, { ...at, fetch: endAt204 });
    expect([ended.items, ended.errors, sent]).toEqual([[], [], [204]]);

    sent.length = 0;
    // Without them: the 204 is an error to it, retried; bounded here, and its backoff not waited for.
    const retried = await drain(hey.publishedStreamExecution, {
      ...at,
      fetch: counted,
      sseMaxRetryAttempts: 3,
      sseSleepFn: async () => {},
    });
    expect([retried.items, sent]).toEqual([[], [204, 204, 204]]);
    expect(retried.errors).toEqual(Array(3).fill('Error: No body in SSE response'));
  });
});

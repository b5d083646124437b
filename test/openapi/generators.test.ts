import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@hey-api/openapi-ts';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedDocuments } from './served-documents.ts';

/**
 * Mainstream generators, with their default options, make usable types of every served document: the README's own
 * request bodies type-check against the generated request types, answers are typed (a status is its string union),
 * and the stream events are named types; in 3.1 a stream's answer is its events' data or text, which is what hey-api's
 * SSE client yields (hey-api-client.test.ts runs it). openapi-typescript and @hey-api/openapi-ts (types plugin, with
 * its default plugins) each generate from the four documents; one TypeScript program then checks a file per document.
 */

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The JSON bodies the README's curl examples send, by what they are; shell substitutions become a fixed time. */
function readmeBodies() {
  const bodies: { kind: 'execute' | 'decision' | 'call' | 'text'; json: string }[] = [];
  for (const match of README.matchAll(
    /curl [^\n]*?(\/execute|\/stream|\/approve|\/reject|\/events)\b[^\n]*?-d '([^']*(?:'"[^"]*"'[^']*)*)'/gs,
  )) {
    const json = match[2]!.replace(/'"\$\(date[^)]*\)"'/g, '2026-05-01T09:30:00Z');
    const parsed = JSON.parse(json) as { type?: string };
    const kind =
      match[1] === '/events'
        ? parsed.type === 'call'
          ? 'call'
          : 'text'
        : match[1] === '/approve' || match[1] === '/reject'
          ? 'decision'
          : 'execute';
    bodies.push({ kind, json });
  }
  return bodies;
}

const RUN_EVENT_NAMES = `'start' | 'token' | 'tool_call' | 'agent_handoff' | 'node_update' | 'image' | 'error' | 'complete' | 'resume'`;
const STATUSES = `'queued' | 'running' | 'completed' | 'failed' | 'interrupted' | 'cancelled'`;

const PRELUDE = `
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
export const expectType = <T extends true>(): T => true as T;
`;

/** The checks of a published document: `t` names its request and answer types, as each generator names them. */
function publishedChecks(
  bodies: ReturnType<typeof readmeBodies>,
  t: {
    execute: string;
    decision: string;
    result: string;
    runEvent: string;
    lifecycleEvent: string;
    /** 3.1: a stream's answer, and the data of its events, which is what an SSE client generated from it yields. */
    stream?: { answer: string; data: string };
  },
) {
  const execute = bodies.filter((body) => body.kind === 'execute').map((body, i) => `const execute${i}: ${t.execute} = ${body.json};`);
  const decision = bodies.filter((body) => body.kind === 'decision').map((body, i) => `const decision${i}: ${t.decision} = ${body.json};`);
  return block([
    ...execute,
    ...decision,
    `const bare: ${t.execute} = { user_id: 'u1' };`,
    `const noFeedback: ${t.decision} = {};`,
    `// @ts-expect-error user_id is a string\nconst wrong: ${t.execute} = { user_id: 5 };`,
    `// @ts-expect-error input is an object\nconst wrongInput: ${t.execute} = { user_id: 'u1', input: 'hello' };`,
    `expectType<Equal<${t.result}['status'], ${STATUSES}>>();`,
    `expectType<Equal<${t.runEvent}['event'], ${RUN_EVENT_NAMES}>>();`,
    `expectType<Equal<${t.lifecycleEvent}['event'], 'status' | 'decision' | 'resume'>>();`,
    ...(t.stream
      ? [
          `expectType<Equal<${t.stream.answer}, ${t.stream.data} | string>>();`,
          `expectType<Equal<${t.runEvent}['data'], ${t.stream.data}>>();`,
        ]
      : []),
  ]);
}

function webhookChecks(bodies: ReturnType<typeof readmeBodies>, t: { event: string; accepted: string }) {
  return block([
    ...bodies
      .filter((body) => body.kind === 'call' || body.kind === 'text')
      .map((body, i) => `const event${i}: ${t.event} = ${body.json};`),
    `// @ts-expect-error metadata is an object\nconst wrongMetadata: ${t.event} = { type: 'call', external_id: 'c', occurred_at: '2026-05-01T09:30:00Z', metadata: 'x', audio: { url: 'https://a.example/c.mp3', format: 'mp3' } };`,
    `expectType<Equal<${t.accepted}['status'], 'accepted'>>();`,
  ]);
}

/** One generator's checks, in a block of their own: the same names for each generator. */
const block = (lines: string[]) => `{\n${lines.join('\n')}\n}`;

let dir: string;
const files: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'openapi-generators-'));
  const bodies = readmeBodies();
  expect(bodies.map((body) => body.kind).sort()).toEqual(expect.arrayContaining(['call', 'decision', 'execute', 'text']));
  for (const { name, document } of servedDocuments()) {
    const stem = name.replace(/\.json$/, '').replace(/\W/g, '-');
    const source = join(dir, `${stem}.json`);
    writeFileSync(source, JSON.stringify(document));
    writeFileSync(join(dir, `${stem}.ots.ts`), astToString(await openapiTS(document as unknown as Parameters<typeof openapiTS>[0])));
    // Default plugins and client; only the log level is set, to keep the test's output quiet.
    await createClient({ input: source, output: join(dir, `${stem}-hey`), logs: { level: 'silent' } });

    const v31 = name.includes('3.1');
    const ots = `import type { components, paths } from './${stem}.ots.ts';`;
    const hey = `import type * as H from './${stem}-hey/types.gen.ts';`;
    const checks = name.startsWith('published')
      ? [
          publishedChecks(bodies, {
            execute: `paths['/workflows/{workflow_id}/execute']['post']['requestBody']['content']['application/json']`,
            decision: `NonNullable<paths['/executions/{execution_id}/approve']['post']['requestBody']>['content']['application/json']`,
            result: `components['schemas']['ExecuteResult']`,
            runEvent: `components['schemas']['RunStreamEvent']`,
            lifecycleEvent: `components['schemas']['LifecycleStreamEvent']`,
            ...(v31
              ? {
                  stream: {
                    answer: `paths['/workflows/{workflow_id}/stream']['post']['responses'][200]['content']['text/event-stream']`,
                    data: `components['schemas']['RunStreamEventData']`,
                  },
                }
              : {}),
          }),
          publishedChecks(bodies, {
            execute: `H.PublishedExecuteData['body']`,
            decision: `NonNullable<H.PublishedApproveData['body']>`,
            result: 'H.ExecuteResult',
            runEvent: 'H.RunStreamEvent',
            lifecycleEvent: 'H.LifecycleStreamEvent',
            ...(v31 ? { stream: { answer: 'H.PublishedStreamWorkflowResponses[200]', data: 'H.RunStreamEventData' } } : {}),
          }),
        ]
      : [
          webhookChecks(bodies, {
            event: `paths['/{token}/events']['post']['requestBody']['content']['application/json']`,
            accepted: `components['schemas']['Accepted']`,
          }),
          webhookChecks(bodies, { event: `H.WebhookPostEventData['body']`, accepted: 'H.Accepted' }),
        ];
    const file = join(dir, `${stem}.check.ts`);
    writeFileSync(file, [ots, hey, PRELUDE, ...checks].join('\n'));
    files.push(file);
  }
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('types generated from the served documents with default options', () => {
  it("type the README's request bodies, the answers and the stream events, for openapi-typescript and @hey-api/openapi-ts alike", () => {
    const program = ts.createProgram(files, {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      types: [],
    });
    const problems = ts.getPreEmitDiagnostics(program).map((diagnostic) => {
      const where = diagnostic.file
        ? `${diagnostic.file.fileName.slice(dir.length + 1)}:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line + 1}`
        : '';
      return `${where} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
    });

    expect(files).toHaveLength(4);
    expect(problems).toEqual([]);
  });
});

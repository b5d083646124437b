import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import { createKey, pollExecution, publishedClient } from '../support/published.ts';
import { refusedAdmin, startTestTwin, type TestTwin } from '../support/local-twin.ts';

/** A workflow's models as the operator publishes them and a caller runs them, through the CLI and the twin. */
const PROJECT = 'models';
const HAIKU_35 = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const HAIKU_45_US = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';
const CANVAS = 'amazon.nova-canvas-v1:0';
/** What publish, an execution's overrides and an execution say of Nova Canvas today. */
const CANVAS_ENDED = `"${CANVAS}" reached end of life on Bedrock on 2026-09-30; no Bedrock image model is supported now: use provider "scripted" offline or remove the image node`;
let twin: TestTwin;

const agentWorkflow = (id: string, model: string) => ({
  id,
  name: id,
  start: 'front',
  nodes: {
    front: { type: 'agent', provider: 'bedrock', model_id: model, instructions: 'Answer.', next: 'done' },
    done: { type: 'end', output: '{{nodes.front.output}}' },
  },
});
const imageWorkflow = (id: string, image: object) => ({
  id,
  name: id,
  start: 'draw',
  nodes: {
    draw: { type: 'image', provider: 'bedrock', prompt: '{{input.message}}', width: 320, height: 320, next: 'note', ...image },
    note: { type: 'llm', provider: 'scripted', reply: 'Drawn.', next: 'done' },
    done: { type: 'end', output: '{{nodes.draw.output.key}}' },
  },
});
function definitionFile(workflow: object): string {
  const path = join(mkdtempSync(join(tmpdir(), 'models-')), 'w.json');
  writeFileSync(path, JSON.stringify(workflow));
  return path;
}

beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

describe('publishing and running workflows by their models', () => {
  it('refuses a workflow naming a model past its end of life, naming the file, node and field', async () => {
    const refused = await refusedAdmin('publish', definitionFile(agentWorkflow('old', HAIKU_35)), '--project', PROJECT);
    expect(refused).toEqual({
      exitCode: 1,
      error: `Invalid workflow definition in w.json: w.json.nodes.front.model_id: "${HAIKU_35}" reached end of life on Bedrock on 2026-06-19; use ${HAIKU_45_US}`,
    });
  });

  it('publishes a Legacy model with a warning on stderr and in the answer', async () => {
    const beforeEndOfLife = () => Date.parse('2026-05-01T00:00:00Z');
    const result = await runCli(['publish', definitionFile(agentWorkflow('legacy', HAIKU_35)), '--project', `${PROJECT}-legacy`], {
      stdin: () => Promise.resolve(''),
      now: beforeEndOfLife,
    });
    const warning = `w.json.nodes.front.model_id: "${HAIKU_35}" is Legacy on Bedrock and stops answering on 2026-06-19; use ${HAIKU_45_US}`;
    expect(result.exitCode, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ workflows: ['legacy'], warnings: [warning] });
    expect(result.stderr).toBe(`warning: ${warning}\n`);
  });

  it('runs a third-party model through its inference profile, and refuses an execution overriding it to an ended one', async () => {
    await twin.admin('publish', definitionFile(agentWorkflow('claude', HAIKU_45_US)), '--project', PROJECT);
    const client = publishedClient(twin, (await createKey(twin, 'full', { project: PROJECT })).key);
    twin.bedrock.reset();
    twin.bedrock.scriptConverse(HAIKU_45_US, [{ text: ['Hello', ' there'] }]);

    const started = await client.execute('claude', { user_id: 'u', input: { message: 'hi' } });
    expect(started.status, started.text).toBeLessThan(300);
    const done = await pollExecution(
      client,
      started.body.execution_id,
      (body) => body.status !== 'queued' && body.status !== 'running',
      60_000,
    );
    expect(done).toMatchObject({ status: 'completed', output: 'Hello there' });
    expect(twin.bedrock.requests.map((request) => request.modelId)).toEqual([HAIKU_45_US]);

    const overridden = await client.execute('claude', {
      user_id: 'u',
      input: { message: 'hi' },
      overrides: { front: { model_id: HAIKU_35 } },
    });
    expect(overridden.status).toBe(400);
    expect(JSON.stringify(overridden.body)).toContain('overrides.front.model_id');
    expect(JSON.stringify(overridden.body)).toContain('reached end of life on Bedrock on 2026-06-19');
    expect(twin.bedrock.requests).toHaveLength(1);
  });
});

describe('a bedrock image node, with Nova Canvas past its end of life', () => {
  it('is refused at publish, naming the node, the model and the date, and saying no Bedrock image model is supported', async () => {
    expect(await refusedAdmin('publish', definitionFile(imageWorkflow('canvas', { model_id: CANVAS })), '--project', PROJECT)).toEqual({
      exitCode: 1,
      error: `Invalid workflow definition in w.json: w.json.nodes.draw.model_id: ${CANVAS_ENDED}`,
    });
    // Without model_id it gets no default: the same refusal, saying the model is required.
    expect(await refusedAdmin('publish', definitionFile(imageWorkflow('unnamed', {})), '--project', PROJECT)).toEqual({
      exitCode: 1,
      error: `Invalid workflow definition in w.json: w.json.nodes.draw.model_id: required for provider bedrock, and ${CANVAS_ENDED}`,
    });
  });

  it('in a workflow published before the end: its runs are refused overrides and fail naming the model, without a Bedrock call', async () => {
    // A publication is a project's whole set of workflows: both go in one, published before Canvas's end.
    const project = `${PROJECT}-canvas`;
    const dir = mkdtempSync(join(tmpdir(), 'models-'));
    writeFileSync(join(dir, 'drawing.json'), JSON.stringify(imageWorkflow('drawing', { model_id: CANVAS })));
    writeFileSync(join(dir, 'agent.json'), JSON.stringify(agentWorkflow('agent', HAIKU_45_US)));
    const beforeEndOfLife = () => Date.parse('2026-09-01T00:00:00Z');
    const published = await runCli(['publish', dir, '--project', project], { stdin: () => Promise.resolve(''), now: beforeEndOfLife });
    expect(published.exitCode, published.stderr).toBe(0);
    expect(published.stderr).toMatch(
      /warning: drawing\.json\.nodes\.draw\.model_id: "amazon\.nova-canvas-v1:0" is Legacy on Bedrock and stops answering on 2026-09-30/,
    );
    const client = publishedClient(twin, (await createKey(twin, 'full', { project })).key);
    twin.bedrock.reset();

    const overridden = await client.execute('drawing', {
      user_id: 'u',
      input: { message: 'a lighthouse' },
      overrides: { draw: { prompt: 'a harbour' } },
    });
    expect(overridden.status).toBe(400);
    expect(overridden.body).toEqual({ detail: `Invalid overrides: overrides.draw.model_id: ${CANVAS_ENDED}` });
    const toCanvas = await client.execute('agent', { user_id: 'u', input: { message: 'hi' }, overrides: { front: { model_id: CANVAS } } });
    expect(toCanvas.status).toBe(400);
    expect(toCanvas.body).toEqual({ detail: `Invalid overrides: overrides.front.model_id: "${CANVAS}" is an image model` });

    const started = await client.execute('drawing', { user_id: 'u', input: { message: 'a lighthouse' } });
    expect(started.status, started.text).toBeLessThan(300);
    const done = await pollExecution(
      client,
      started.body.execution_id,
      (body) => body.status !== 'queued' && body.status !== 'running',
      60_000,
    );
    expect(done).toMatchObject({ status: 'failed', error: `Bedrock model ${CANVAS_ENDED}` });
    expect(twin.bedrock.requests).toEqual([]);
    expect(twin.accessDenials).toEqual([]);
  });
});

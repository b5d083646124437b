import { describe, expect, it } from 'vitest';
import { BEDROCK_CATALOG, catalogIds, lookUpModel, modelProblem } from '#shared/bedrock-catalog.ts';
import { ValidationError } from '#shared/errors.ts';
import { DEFAULT_BEDROCK_MODELS, parseBedrockModels } from '#lib/cdk/bedrock-models.ts';
import { loadPriceSheet, modelPriceOf } from '#lib/pricing/price-sheet.ts';
import { runModelsCommand } from '#lib/admin/models-commands.ts';
import { definitionSchema, definitionWarnings, parseDefinition } from '#workflows/definition-validation.ts';
import { applyOverrides } from '#workflows/overrides.ts';

const BEFORE_HAIKU_35_EOL = Date.parse('2026-05-01T00:00:00Z');
const AFTER_HAIKU_35_EOL = Date.parse('2026-11-26T00:00:00Z');
const HAIKU_35 = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const HAIKU_45_US = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';

const agentWorkflow = (model: string, extra: Record<string, unknown> = {}) => ({
  id: 'w',
  name: 'W',
  start: 'front',
  nodes: {
    front: { type: 'agent', provider: 'bedrock', model_id: model, next: 'done', ...extra },
    done: { type: 'end', output: 'x' },
  },
});
const issuesOf = (document: unknown, now = AFTER_HAIKU_35_EOL) => {
  const result = definitionSchema({ allowLoopbackTools: false, now }).safeParse(document);
  return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
};

describe('the model catalog', () => {
  it('tells active, Legacy and ended models apart by the day Bedrock stops answering', () => {
    expect(lookUpModel('amazon.nova-lite-v1:0', AFTER_HAIKU_35_EOL)?.state).toBe('active');
    expect(lookUpModel(HAIKU_35, BEFORE_HAIKU_35_EOL)?.state).toBe('legacy');
    expect(lookUpModel(HAIKU_35, Date.parse('2026-06-18T23:59:59Z'))?.state).toBe('legacy');
    expect(lookUpModel(HAIKU_35, Date.parse('2026-06-19T00:00:00Z'))?.state).toBe('ended');
    expect(lookUpModel(`us.${HAIKU_35}`, AFTER_HAIKU_35_EOL)?.state).toBe('ended');
    expect(lookUpModel('amazon.titan-text-express-v1', AFTER_HAIKU_35_EOL)).toBeUndefined();
    expect(lookUpModel('apac.anthropic.claude-haiku-4-5-20251001-v1:0', AFTER_HAIKU_35_EOL)).toBeUndefined();
  });

  it('allows by default only active models, each through a way Bedrock serves it on demand', () => {
    expect(DEFAULT_BEDROCK_MODELS).not.toContain(HAIKU_35);
    expect(DEFAULT_BEDROCK_MODELS).not.toContain(`us.${HAIKU_35}`);
    expect(DEFAULT_BEDROCK_MODELS).not.toContain('anthropic.claude-haiku-4-5-20251001-v1:0');
    expect(DEFAULT_BEDROCK_MODELS).toContain(HAIKU_45_US);
    for (const id of DEFAULT_BEDROCK_MODELS) expect(lookUpModel(id, AFTER_HAIKU_35_EOL)?.state, id).toBe('active');
    expect(parseBedrockModels(undefined)).toEqual([...DEFAULT_BEDROCK_MODELS]);
  });

  it('refuses unknown, ended, profile-only and wrong-kind models, and warns about a Legacy one with its date', () => {
    expect(modelProblem('amazon.titan-text-express-v1', 'text', AFTER_HAIKU_35_EOL).refuse).toMatch(/is not a supported Bedrock model; supported: amazon\.nova-micro-v1:0/);
    expect(modelProblem(HAIKU_35, 'text', AFTER_HAIKU_35_EOL).refuse).toBe(`"${HAIKU_35}" reached end of life on Bedrock on 2026-06-19; use ${HAIKU_45_US}`);
    expect(modelProblem(HAIKU_35, 'text', BEFORE_HAIKU_35_EOL)).toEqual({ warn: `"${HAIKU_35}" is Legacy on Bedrock and stops answering on 2026-06-19; use ${HAIKU_45_US}` });
    expect(modelProblem('anthropic.claude-haiku-4-5-20251001-v1:0', 'text', AFTER_HAIKU_35_EOL).refuse).toMatch(/only through an inference profile: name us\.anthropic/);
    expect(modelProblem('amazon.nova-canvas-v1:0', 'text', AFTER_HAIKU_35_EOL).refuse).toBe('"amazon.nova-canvas-v1:0" is an image model');
    expect(modelProblem('amazon.nova-lite-v1:0', 'image', AFTER_HAIKU_35_EOL).refuse).toBe('"amazon.nova-lite-v1:0" is a text model');
    expect(modelProblem(HAIKU_45_US, 'text', AFTER_HAIKU_35_EOL)).toEqual({});
  });

  it('refuses at synth a deployment list naming a model Bedrock no longer serves', () => {
    expect(() => parseBedrockModels(HAIKU_35, AFTER_HAIKU_35_EOL)).toThrow(/reached end of life on Bedrock on 2026-06-19/);
    expect(parseBedrockModels(HAIKU_35, BEFORE_HAIKU_35_EOL)).toEqual([HAIKU_35]);
  });

  it('prices every id a workflow may name, and lists each with its state and price', () => {
    const sheet = loadPriceSheet();
    for (const id of catalogIds()) expect(modelPriceOf(sheet, id), id).toBeDefined();
    expect(modelPriceOf(sheet, 'amazon.titan-text-express-v1')).toBeUndefined();
    expect(modelPriceOf(sheet, `global.${BEDROCK_CATALOG.find((model) => model.provider === 'anthropic')!.id}`)).toMatchObject({ input_usd_per_million: 1, output_usd_per_million: 5 });
    const listed = runModelsCommand([], AFTER_HAIKU_35_EOL);
    expect(listed.models.map((model) => model.id)).toEqual(catalogIds());
    expect(listed.models.find((model) => model.id === HAIKU_35)).toMatchObject({ state: 'ended', end_of_life: '2026-06-19', allowed_by_default: false, price: { input_usd_per_million: 0.8 } });
    expect(listed.models.find((model) => model.id === HAIKU_45_US)).toMatchObject({ state: 'active', allowed_by_default: true, marketplace_subscription: true, price: { output_usd_per_million: 5.5 } });
    expect(() => runModelsCommand(['delete'], AFTER_HAIKU_35_EOL)).toThrow(/unknown models command delete/);
  });
});

describe('publishing a workflow that names a model', () => {
  it('refuses an ended model and an unknown one, naming the node', () => {
    expect(issuesOf(agentWorkflow(HAIKU_35))).toEqual([`nodes.front.model_id: "${HAIKU_35}" reached end of life on Bedrock on 2026-06-19; use ${HAIKU_45_US}`]);
    expect(issuesOf(agentWorkflow('amazon.titan-text-express-v1'))[0]).toMatch(/^nodes\.front\.model_id: "amazon\.titan-text-express-v1" is not a supported Bedrock model/);
    const image = { id: 'i', name: 'I', start: 'p', nodes: { p: { type: 'image', provider: 'bedrock', model_id: 'amazon.nova-lite-v1:0', prompt: 'x', width: 320, height: 320, next: 'e' }, e: { type: 'end', output: 1 } } };
    expect(issuesOf(image)).toEqual(['nodes.p.model_id: "amazon.nova-lite-v1:0" is a text model']);
  });

  it('publishes a Legacy model with a warning naming the node and the date', () => {
    const definition = parseDefinition(agentWorkflow(HAIKU_35), 'w.json', { allowLoopbackTools: false, now: BEFORE_HAIKU_35_EOL });
    expect(definitionWarnings(definition, 'w.json', BEFORE_HAIKU_35_EOL)).toEqual([
      { field: 'w.json.nodes.front.model_id', message: `"${HAIKU_35}" is Legacy on Bedrock and stops answering on 2026-06-19; use ${HAIKU_45_US}` },
    ]);
    expect(definitionWarnings(parseDefinition(agentWorkflow(HAIKU_45_US), 'w.json', { allowLoopbackTools: false, now: BEFORE_HAIKU_35_EOL }), 'w.json', BEFORE_HAIKU_35_EOL)).toEqual([]);
  });

  it('refuses a run overriding a node to an ended model, but not the steps of a run already started', () => {
    const definition = parseDefinition(agentWorkflow(HAIKU_45_US), 'w.json', { allowLoopbackTools: false, now: AFTER_HAIKU_35_EOL });
    const overrides = { front: { model_id: HAIKU_35 } };
    expect(() => applyOverrides(definition, overrides, AFTER_HAIKU_35_EOL)).toThrow(ValidationError);
    try {
      applyOverrides(definition, overrides, AFTER_HAIKU_35_EOL);
    } catch (error) {
      expect((error as ValidationError).details).toEqual([{ field: 'overrides.front.model_id', message: expect.stringMatching(/reached end of life/) }]);
    }
    expect(applyOverrides(definition, overrides).nodes.front).toMatchObject({ model_id: HAIKU_35 });
  });

  it("refuses a hand-off whose tool name would pass Converse's 64 characters, for a Bedrock agent", () => {
    const longest = 'n'.repeat(52);
    const tooLong = 'n'.repeat(53);
    const withHandoff = (target: string, provider: 'bedrock' | 'scripted') => ({
      id: 'w',
      name: 'W',
      start: 'front',
      nodes: {
        front: { type: 'agent', provider, model_id: HAIKU_45_US, handoffs: [target], script: [{ reply: 'x' }], next: 'done' },
        [target]: { type: 'agent', provider: 'bedrock', model_id: HAIKU_45_US, next: 'done' },
        done: { type: 'end', output: 'x' },
      },
    });
    expect(issuesOf(withHandoff(longest, 'bedrock'))).toEqual([]);
    expect(issuesOf(withHandoff(tooLong, 'bedrock'))).toEqual([
      `nodes.front.handoffs.0: the model sees this hand-off as the tool "transfer_to_${tooLong}" (65 characters), and Bedrock allows at most 64: name the node with at most 52 characters`,
    ]);
    expect(issuesOf(withHandoff(tooLong, 'scripted'))).toEqual([]);
  });

  it('refuses {{secret.*}} in a tool parameters schema or description, naming the field', () => {
    const withTool = (tool: Record<string, unknown>) => ({
      id: 'w',
      name: 'W',
      start: 'front',
      tools: { lookup: { type: 'http', url: 'https://api.example.com/x', headers: { 'x-key': '{{secret.KEY}}' }, ...tool } },
      nodes: { front: { type: 'agent', provider: 'bedrock', model_id: HAIKU_45_US, tools: ['lookup'], next: 'done' }, done: { type: 'end', output: 'x' } },
    });
    expect(issuesOf(withTool({}))).toEqual([]);
    const secretIn = 'uses {{secret.*}}; secrets are read only in tool URLs and headers, so they never reach a model, an output or an event';
    expect(issuesOf(withTool({ parameters: { type: 'object', properties: { q: { type: 'string', default: '{{ secret.KEY }}' } } } }))).toEqual([
      `tools.lookup.parameters.properties.q.default: ${secretIn}`,
    ]);
    expect(issuesOf(withTool({ parameters: { type: 'object', properties: { '{{secret.KEY}}': { type: 'string' } } } }))).toEqual([
      `tools.lookup.parameters.properties.{{secret.KEY}}: ${secretIn}`,
    ]);
    expect(issuesOf(withTool({ description: 'Uses {{secret.KEY}}' }))).toEqual([`tools.lookup.description: ${secretIn}`]);
  });
});

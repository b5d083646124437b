import { describe, expect, it } from 'vitest';
import { BEDROCK_CATALOG, catalogIds, lookUpModel, modelProblem } from '#shared/bedrock-catalog.ts';
import { ValidationError } from '#shared/errors.ts';
import { defaultBedrockModels, parseBedrockModels } from '#lib/cdk/bedrock-models.ts';
import { loadPriceSheet, modelPriceOf } from '#lib/pricing/price-sheet.ts';
import { runModelsCommand } from '#lib/admin/models-commands.ts';
import { definitionSchema, definitionWarnings, parseDefinition } from '#workflows/definition-validation.ts';
import { applyOverrides } from '#workflows/overrides.ts';
import type { WorkflowDefinition } from '#workflows/definition-schema.ts';

const BEFORE_HAIKU_35_EOL = Date.parse('2026-05-01T00:00:00Z');
const AFTER_HAIKU_35_EOL = Date.parse('2026-11-26T00:00:00Z');
const HAIKU_35 = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const HAIKU_45_US = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';
const CANVAS = 'amazon.nova-canvas-v1:0';
const BEFORE_CANVAS_EOL = Date.parse('2026-09-01T00:00:00Z');
/** What publish, an execution's overrides and an execution say of Nova Canvas (and of a bedrock image node naming no model) today. */
const NO_IMAGE_MODEL = 'no Bedrock image model is supported now: use provider "scripted" offline or remove the image node';
const CANVAS_ENDED = `"${CANVAS}" reached end of life on Bedrock on 2026-09-30; ${NO_IMAGE_MODEL}`;

const agentWorkflow = (model: string, extra: Record<string, unknown> = {}) => ({
  id: 'w',
  name: 'W',
  start: 'front',
  nodes: {
    front: { type: 'agent', provider: 'bedrock', model_id: model, next: 'done', ...extra },
    done: { type: 'end', output: 'x' },
  },
});
const imageWorkflow = (image: Record<string, unknown>) => ({
  id: 'i',
  name: 'I',
  start: 'p',
  nodes: {
    p: { type: 'image', provider: 'bedrock', prompt: 'x', width: 320, height: 320, next: 'e', ...image },
    e: { type: 'end', output: 1 },
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
    expect(lookUpModel(CANVAS, Date.parse('2026-09-29T23:59:59Z'))?.state).toBe('legacy');
    expect(lookUpModel(CANVAS, Date.parse('2026-09-30T00:00:00Z'))?.state).toBe('ended');
  });

  it('names a replacement for every model with an end of life: an active model of its kind, or none when the catalog has no other', () => {
    for (const model of BEDROCK_CATALOG.filter((entry) => entry.endOfLife !== undefined)) {
      const replacement = model.replacement;
      expect(replacement, model.id).toBeDefined();
      const othersServed = BEDROCK_CATALOG.filter((other) => other.kind === model.kind && other.endOfLife === undefined);
      if (replacement && 'model' in replacement) {
        const found = lookUpModel(replacement.model, AFTER_HAIKU_35_EOL);
        expect(found, model.id).toMatchObject({ state: 'active', model: { kind: model.kind } });
        expect(catalogIds(), model.id).toContain(replacement.model);
      } else {
        // "None" is said only while it is true: no other model of the kind is served.
        expect(othersServed, model.id).toEqual([]);
      }
    }
    // Nova Canvas is the catalog's only image model: it has no replacement, and says what to do instead.
    expect(BEDROCK_CATALOG.filter((model) => model.kind === 'image').map((model) => model.id)).toEqual([CANVAS]);
    expect(BEDROCK_CATALOG.find((model) => model.id === CANVAS)).toMatchObject({
      endOfLife: '2026-09-30',
      replacement: { none: 'use provider "scripted" offline or remove the image node' },
    });
  });

  it('allows by default only active models, each through a way Bedrock serves it on demand', () => {
    const DEFAULT_BEDROCK_MODELS = defaultBedrockModels('us-east-1');
    expect(DEFAULT_BEDROCK_MODELS).not.toContain(HAIKU_35);
    expect(DEFAULT_BEDROCK_MODELS).not.toContain(`us.${HAIKU_35}`);
    expect(DEFAULT_BEDROCK_MODELS).not.toContain('anthropic.claude-haiku-4-5-20251001-v1:0');
    expect(DEFAULT_BEDROCK_MODELS.filter((id) => id.includes('nova-canvas'))).toEqual([]);
    expect(DEFAULT_BEDROCK_MODELS).toContain(HAIKU_45_US);
    for (const id of DEFAULT_BEDROCK_MODELS) expect(lookUpModel(id, AFTER_HAIKU_35_EOL)?.state, id).toBe('active');
    expect(parseBedrockModels(undefined, 'us-east-1')).toEqual([...DEFAULT_BEDROCK_MODELS]);
  });

  it('refuses unknown, ended, profile-only and wrong-kind models, and warns about a Legacy one with its date', () => {
    expect(modelProblem('amazon.titan-text-express-v1', 'text', AFTER_HAIKU_35_EOL).refuse).toMatch(
      /is not a supported Bedrock model; supported: amazon\.nova-micro-v1:0/,
    );
    expect(modelProblem(HAIKU_35, 'text', AFTER_HAIKU_35_EOL).refuse).toBe(
      `"${HAIKU_35}" reached end of life on Bedrock on 2026-06-19; use ${HAIKU_45_US}`,
    );
    expect(modelProblem(HAIKU_35, 'text', BEFORE_HAIKU_35_EOL)).toEqual({
      warn: `"${HAIKU_35}" is Legacy on Bedrock and stops answering on 2026-06-19; use ${HAIKU_45_US}`,
    });
    expect(modelProblem('anthropic.claude-haiku-4-5-20251001-v1:0', 'text', AFTER_HAIKU_35_EOL).refuse).toMatch(
      /only through an inference profile: name us\.anthropic/,
    );
    expect(modelProblem('amazon.nova-canvas-v1:0', 'text', AFTER_HAIKU_35_EOL).refuse).toBe('"amazon.nova-canvas-v1:0" is an image model');
    expect(modelProblem('amazon.nova-lite-v1:0', 'image', AFTER_HAIKU_35_EOL).refuse).toBe('"amazon.nova-lite-v1:0" is a text model');
    expect(modelProblem(HAIKU_45_US, 'text', AFTER_HAIKU_35_EOL)).toEqual({});
  });

  it('refuses Nova Canvas past its end of life, saying no Bedrock image model is supported, and warns before it', () => {
    expect(modelProblem(CANVAS, 'image', AFTER_HAIKU_35_EOL)).toEqual({ refuse: CANVAS_ENDED });
    expect(modelProblem(CANVAS, 'image', BEFORE_CANVAS_EOL)).toEqual({
      warn: `"${CANVAS}" is Legacy on Bedrock and stops answering on 2026-09-30; the product supports no other Bedrock image model: use provider "scripted" offline or remove the image node`,
    });
    // An image model the catalog does not know lists no ended model as supported.
    expect(modelProblem('stability.sd3-5-large-v1:0', 'image', AFTER_HAIKU_35_EOL)).toEqual({
      refuse: `"stability.sd3-5-large-v1:0" is not a supported Bedrock model; ${NO_IMAGE_MODEL}`,
    });
    expect(modelProblem('stability.sd3-5-large-v1:0', 'image', BEFORE_CANVAS_EOL).refuse).toBe(
      '"stability.sd3-5-large-v1:0" is not a supported Bedrock model; supported: amazon.nova-canvas-v1:0',
    );
    expect(modelProblem('amazon.titan-text-express-v1', 'text', AFTER_HAIKU_35_EOL).refuse).not.toContain(HAIKU_35);
  });

  it('refuses at synth a deployment list naming a model Bedrock no longer serves', () => {
    expect(() => parseBedrockModels(`us.${HAIKU_35}`, 'us-east-1', AFTER_HAIKU_35_EOL)).toThrow(
      /reached end of life on Bedrock on 2026-06-19/,
    );
    expect(parseBedrockModels(`us.${HAIKU_35}`, 'us-east-1', BEFORE_HAIKU_35_EOL)).toEqual([`us.${HAIKU_35}`]);
    expect(() => parseBedrockModels(`amazon.nova-lite-v1:0,${CANVAS}`, 'us-east-1', AFTER_HAIKU_35_EOL)).toThrow(
      `CDK context bedrockModels: ${CANVAS} reached end of life on Bedrock on 2026-09-30`,
    );
    expect(parseBedrockModels([CANVAS], 'us-east-1', BEFORE_CANVAS_EOL)).toEqual([CANVAS]);
  });

  it('prices every id a workflow may name, and lists each with its state and price', () => {
    const sheet = loadPriceSheet();
    for (const id of catalogIds()) expect(modelPriceOf(sheet, id), id).toBeDefined();
    expect(modelPriceOf(sheet, 'amazon.titan-text-express-v1')).toBeUndefined();
    expect(modelPriceOf(sheet, `global.${BEDROCK_CATALOG.find((model) => model.provider === 'anthropic')!.id}`)).toMatchObject({
      input_usd_per_million: 1,
      output_usd_per_million: 5,
    });
    const listed = runModelsCommand([], AFTER_HAIKU_35_EOL, 'us-east-1');
    expect(listed.models.map((model) => model.id)).toEqual(catalogIds());
    expect(listed.models.find((model) => model.id === HAIKU_35)).toMatchObject({
      state: 'ended',
      end_of_life: '2026-06-19',
      allowed_by_default: false,
      price: { input_usd_per_million: 0.8 },
    });
    expect(listed.models.find((model) => model.id === HAIKU_35)).toMatchObject({ replacement: HAIKU_45_US, instead: null });
    expect(listed.models.find((model) => model.id === HAIKU_45_US)).toMatchObject({
      state: 'active',
      allowed_by_default: true,
      marketplace_subscription: true,
      price: { output_usd_per_million: 5.5 },
    });
    // Ended, with no replacement; still priced, for the usage metered before its end.
    expect(listed.models.find((model) => model.id === CANVAS)).toEqual({
      id: CANVAS,
      kind: 'image',
      provider: 'amazon',
      state: 'ended',
      end_of_life: '2026-09-30',
      replacement: null,
      instead: 'use provider "scripted" offline or remove the image node',
      allowed_by_default: false,
      callable_from_region: true,
      marketplace_subscription: false,
      price: expect.objectContaining({ usd_per_image: expect.objectContaining({ standard_1024: 0.04 }) }) as unknown,
      checked: {
        source: 'docs.aws.amazon.com/bedrock/latest/userguide/model-lifecycle-legacy.html',
        on: '2026-11-27',
        note: expect.stringContaining('AWS names no replacement') as unknown,
      },
    });
    // The same list for a deployment in Frankfurt: what a deploy there would allow and could call.
    const frankfurt = runModelsCommand([], AFTER_HAIKU_35_EOL, 'eu-central-1');
    expect(frankfurt.deploy_region).toBe('eu-central-1');
    expect(frankfurt.models.find((model) => model.id === HAIKU_45_US)).toMatchObject({
      allowed_by_default: false,
      callable_from_region: false,
    });
    expect(frankfurt.models.find((model) => model.id === 'eu.anthropic.claude-haiku-4-5-20251001-v1:0')).toMatchObject({
      allowed_by_default: true,
      callable_from_region: true,
    });
    expect(runModelsCommand([], AFTER_HAIKU_35_EOL, 'xx-nowhere-1').deploy_region_note).toMatch(
      /No Bedrock model of the catalog can be called from xx-nowhere-1/,
    );
    expect(() => runModelsCommand([], AFTER_HAIKU_35_EOL, 'Frankfurt')).toThrow(/not an AWS region name/);
    expect(() => runModelsCommand(['delete'], AFTER_HAIKU_35_EOL, 'us-east-1')).toThrow(/unknown models command delete/);
  });
});

describe('the models a deployment allows, by its region', () => {
  const NOVA = ['amazon.nova-micro-v1:0', 'amazon.nova-lite-v1:0', 'amazon.nova-pro-v1:0'];
  const HAIKU_45 = 'anthropic.claude-haiku-4-5-20251001-v1:0';
  const NOVA_2_LITE = 'amazon.nova-2-lite-v1:0';

  it('in us-east-1: the Nova models on demand, and the us. profiles of every active model', () => {
    expect(defaultBedrockModels('us-east-1').sort()).toEqual(
      [...NOVA, ...NOVA.map((id) => `us.${id}`), `us.${NOVA_2_LITE}`, `us.${HAIKU_45}`].sort(),
    );
  });

  it('in eu-central-1: the eu. profiles only (Bedrock serves none of them on demand there), never a us. one', () => {
    expect(defaultBedrockModels('eu-central-1').sort()).toEqual(
      [...NOVA.map((id) => `eu.${id}`), `eu.${NOVA_2_LITE}`, `eu.${HAIKU_45}`].sort(),
    );
  });

  it('in ap-northeast-1: apac. for Nova, jp. where a model has it, and Nova Lite on demand', () => {
    expect(defaultBedrockModels('ap-northeast-1').sort()).toEqual(
      ['amazon.nova-lite-v1:0', ...NOVA.map((id) => `apac.${id}`), `jp.${NOVA_2_LITE}`, `jp.${HAIKU_45}`].sort(),
    );
  });

  it('falls back to a global. profile where a model has no geographic one for the region', () => {
    expect(defaultBedrockModels('ap-northeast-2').sort()).toEqual(
      [...NOVA.map((id) => `apac.${id}`), `global.${NOVA_2_LITE}`, `global.${HAIKU_45}`].sort(),
    );
    expect(defaultBedrockModels('sa-east-1')).toEqual([`global.${HAIKU_45}`]);
  });

  it('refuses a region the catalog has no answer for, naming it', () => {
    expect(() => defaultBedrockModels('cn-north-1')).toThrow(/No Bedrock model of the catalog can be called from cn-north-1/);
    expect(() => parseBedrockModels(undefined, 'xx-nowhere-1')).toThrow(/xx-nowhere-1/);
  });

  it('refuses a listed model the region cannot call, naming the id that works there', () => {
    expect(() => parseBedrockModels(`us.${NOVA[1]}`, 'eu-central-1')).toThrow(
      `CDK context bedrockModels: us.${NOVA[1]} cannot be called from eu-central-1: its profile cannot be called from eu-central-1; use eu.${NOVA[1]}`,
    );
    expect(() => parseBedrockModels(NOVA[0], 'eu-central-1')).toThrow(
      /Bedrock does not serve it on demand in eu-central-1; use eu\.amazon\.nova-micro-v1:0/,
    );
    expect(parseBedrockModels(`eu.${NOVA[2]},eu.${HAIKU_45}`, 'eu-central-1')).toEqual([`eu.${NOVA[2]}`, `eu.${HAIKU_45}`]);
  });

  it('gives every catalog entry the source and the day its lifecycle state was checked', () => {
    for (const model of BEDROCK_CATALOG) {
      expect(model.checked.source, model.id).toMatch(/^docs\.aws\.amazon\.com\/bedrock\/latest\/userguide\/model-(card|lifecycle)/);
      expect(model.checked.on, model.id).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
  });
});

describe('publishing a workflow that names a model', () => {
  it('refuses an ended model and an unknown one, naming the node', () => {
    expect(issuesOf(agentWorkflow(HAIKU_35))).toEqual([
      `nodes.front.model_id: "${HAIKU_35}" reached end of life on Bedrock on 2026-06-19; use ${HAIKU_45_US}`,
    ]);
    expect(issuesOf(agentWorkflow('amazon.titan-text-express-v1'))[0]).toMatch(
      /^nodes\.front\.model_id: "amazon\.titan-text-express-v1" is not a supported Bedrock model/,
    );
    expect(issuesOf(imageWorkflow({ model_id: 'amazon.nova-lite-v1:0' }))).toEqual([
      'nodes.p.model_id: "amazon.nova-lite-v1:0" is a text model',
    ]);
  });

  it('refuses a bedrock image node: Nova Canvas has ended, and one naming no model gets no default', () => {
    expect(issuesOf(imageWorkflow({ model_id: CANVAS }))).toEqual([`nodes.p.model_id: ${CANVAS_ENDED}`]);
    expect(issuesOf(imageWorkflow({}))).toEqual([`nodes.p.model_id: required for provider bedrock, and ${CANVAS_ENDED}`]);
    expect(issuesOf(imageWorkflow({ model_id: `us.${CANVAS}` }))[0]).toBe(
      `nodes.p.model_id: "us.${CANVAS}" is not a supported Bedrock model; ${NO_IMAGE_MODEL}`,
    );
    // Before its end of life the same node publishes, with a warning; without a model it is still refused.
    const before = parseDefinition(imageWorkflow({ model_id: CANVAS }), 'i.json', { allowLoopbackTools: false, now: BEFORE_CANVAS_EOL });
    expect(definitionWarnings(before, 'i.json', BEFORE_CANVAS_EOL)).toEqual([
      {
        field: 'i.json.nodes.p.model_id',
        message: expect.stringMatching(/is Legacy on Bedrock and stops answering on 2026-09-30/) as unknown,
      },
    ]);
    expect(issuesOf(imageWorkflow({}), BEFORE_CANVAS_EOL)).toEqual(['nodes.p.model_id: required for provider bedrock']);
    // The scripted provider draws offline: it needs no model, and none is filled in.
    const scripted = parseDefinition(imageWorkflow({ provider: 'scripted', width: 64, height: 64 }), 'i.json', {
      allowLoopbackTools: false,
      now: AFTER_HAIKU_35_EOL,
    });
    expect(scripted.nodes.p).not.toHaveProperty('model_id');
  });

  it('publishes a Legacy model with a warning naming the node and the date', () => {
    const definition = parseDefinition(agentWorkflow(HAIKU_35), 'w.json', { allowLoopbackTools: false, now: BEFORE_HAIKU_35_EOL });
    expect(definitionWarnings(definition, 'w.json', BEFORE_HAIKU_35_EOL)).toEqual([
      {
        field: 'w.json.nodes.front.model_id',
        message: `"${HAIKU_35}" is Legacy on Bedrock and stops answering on 2026-06-19; use ${HAIKU_45_US}`,
      },
    ]);
    expect(
      definitionWarnings(
        parseDefinition(agentWorkflow(HAIKU_45_US), 'w.json', { allowLoopbackTools: false, now: BEFORE_HAIKU_35_EOL }),
        'w.json',
        BEFORE_HAIKU_35_EOL,
      ),
    ).toEqual([]);
  });

  it('refuses an execution overriding a node to an ended model, but not the steps of an execution already started', () => {
    const definition = parseDefinition(agentWorkflow(HAIKU_45_US), 'w.json', { allowLoopbackTools: false, now: AFTER_HAIKU_35_EOL });
    const overrides = { front: { model_id: HAIKU_35 } };
    expect(() => applyOverrides(definition, overrides, AFTER_HAIKU_35_EOL)).toThrow(ValidationError);
    try {
      applyOverrides(definition, overrides, AFTER_HAIKU_35_EOL);
    } catch (error) {
      expect((error as ValidationError).details).toEqual([
        { field: 'overrides.front.model_id', message: expect.stringMatching(/reached end of life/) },
      ]);
    }
    expect(applyOverrides(definition, overrides).nodes.front).toMatchObject({ model_id: HAIKU_35 });
  });

  it('refuses an execution overriding a node to Nova Canvas, or overriding a bedrock image node of a workflow published before its end', () => {
    const agent = parseDefinition(agentWorkflow(HAIKU_45_US), 'w.json', { allowLoopbackTools: false, now: AFTER_HAIKU_35_EOL });
    const refusal = (definition: WorkflowDefinition, overrides: Record<string, Record<string, unknown>>) => {
      try {
        applyOverrides(definition, overrides, AFTER_HAIKU_35_EOL);
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        return (error as ValidationError).details;
      }
      throw new Error('the overrides were applied');
    };
    expect(refusal(agent, { front: { model_id: CANVAS } })).toEqual([
      { field: 'overrides.front.model_id', message: `"${CANVAS}" is an image model` },
    ]);
    const drawing = parseDefinition(imageWorkflow({ model_id: CANVAS }), 'i.json', { allowLoopbackTools: false, now: BEFORE_CANVAS_EOL });
    expect(refusal(drawing, { p: { prompt: 'a lighthouse' } })).toEqual([{ field: 'overrides.p.model_id', message: CANVAS_ENDED }]);
    // An image node's model is not an execution's to choose.
    expect(refusal(drawing, { p: { model_id: 'amazon.nova-lite-v1:0' } })[0]).toEqual({
      field: 'overrides.p.model_id',
      message: 'not a parameter of this image node (one of prompt, width, height, seed, quality)',
    });
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
      nodes: {
        front: { type: 'agent', provider: 'bedrock', model_id: HAIKU_45_US, tools: ['lookup'], next: 'done' },
        done: { type: 'end', output: 'x' },
      },
    });
    expect(issuesOf(withTool({}))).toEqual([]);
    const secretIn =
      'uses {{secret.*}}; secrets are read only in tool URLs and headers, so they never reach a model, an output or an event';
    expect(
      issuesOf(withTool({ parameters: { type: 'object', properties: { q: { type: 'string', default: '{{ secret.KEY }}' } } } })),
    ).toEqual([`tools.lookup.parameters.properties.q.default: ${secretIn}`]);
    expect(issuesOf(withTool({ parameters: { type: 'object', properties: { '{{secret.KEY}}': { type: 'string' } } } }))).toEqual([
      `tools.lookup.parameters.properties.{{secret.KEY}}: ${secretIn}`,
    ]);
    expect(issuesOf(withTool({ description: 'Uses {{secret.KEY}}' }))).toEqual([`tools.lookup.description: ${secretIn}`]);
  });
});

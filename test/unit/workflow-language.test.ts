import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { callbackUrlProblem } from '#executions/callback-url.ts';
import { describeFailure } from '#engine/step-runner.ts';
import { webhookHeaders } from '#executions/callback-signature.ts';
import { conditionHolds } from '#workflows/condition.ts';
import { definitionSchema } from '#workflows/definition-validation.ts';
import { applyOverrides } from '#workflows/overrides.ts';
import { renderText, renderValue, type TemplateScope } from '#workflows/template.ts';
import { scopeNeeds } from '#workflows/scope-needs.ts';

const workflowDefinitionSchema = definitionSchema({ allowLoopbackTools: false, now: Date.parse('2026-11-26T00:00:00Z') });
import { ValidationError } from '#shared/errors.ts';

const scope: TemplateScope = {
  input: { message: 'hi', count: 3, nested: { a: 'deep' } },
  memory: { name: 'Ann' },
  nodes: { answer: { output: 'forty-two' }, data: { output: { items: [1, 2] } } },
  approval: { decision: 'approved', feedback: 'ok' },
  history: 'user: a\nassistant: b',
};

describe('templates', () => {
  it('renders every placeholder kind, missing values as empty text, non-strings as JSON', () => {
    expect(renderText('{{input.message}} {{ memory.name }} {{nodes.answer.output}} {{approval.feedback}}', scope)).toBe(
      'hi Ann forty-two ok',
    );
    expect(renderText('[{{history}}]', scope)).toBe('[user: a\nassistant: b]');
    expect(renderText('{{input.nested.a}} {{input.missing}}|{{memory.none.deeper}}', scope)).toBe('deep |');
    expect(renderText('n={{input.count}} d={{nodes.data.output}}', scope)).toBe('n=3 d={"items":[1,2]}');
    expect(renderText('{{input.constructor}}{{input.__proto__}}', scope)).toBe('');
  });

  it('keeps a whole-placeholder value typed inside structured output', () => {
    expect(
      renderValue(
        { reply: '{{nodes.answer.output}}', data: '{{nodes.data.output}}', n: '{{input.count}}', list: ['x {{memory.name}}'], fixed: 7 },
        scope,
      ),
    ).toEqual({
      reply: 'forty-two',
      data: { items: [1, 2] },
      n: 3,
      list: ['x Ann'],
      fixed: 7,
    });
  });
});

describe('conditions (JSONata)', () => {
  it('evaluates over input, memory and nodes with JSONata truthiness', async () => {
    expect(await conditionHolds("input.message = 'hi'", scope)).toBe(true);
    expect(await conditionHolds('input.count > 5', scope)).toBe(false);
    expect(await conditionHolds("memory.name in ['Ann', 'Bob']", scope)).toBe(true);
    expect(await conditionHolds('nodes.data.output.items', scope)).toBe(true);
    expect(await conditionHolds('input.absent', scope)).toBe(false);
  });
});

describe('definitions', () => {
  const valid = {
    id: 'w',
    name: 'W',
    start: 'a',
    nodes: { a: { type: 'llm', provider: 'scripted', reply: 'x', next: 'b' }, b: { type: 'end', output: 'y' } },
  };

  it('accepts the minimum language and defaults the description', () => {
    expect(workflowDefinitionSchema.parse(valid).description).toBe('');
  });

  it('names the node and field of every problem', () => {
    const result = workflowDefinitionSchema.safeParse({
      ...valid,
      start: 'zzz',
      nodes: { ...valid.nodes, a: { ...valid.nodes.a, provider: 'bedrock', reply: undefined, typo: 1 } },
    });
    expect(result.success).toBe(false);
    const paths = result.error!.issues.map((issue) => issue.path.join('.'));
    expect(paths).toContain('nodes.a');
  });

  it('requires a model for bedrock nodes and known edges', () => {
    const result = workflowDefinitionSchema.safeParse({
      ...valid,
      start: 'zzz',
      nodes: { ...valid.nodes, a: { type: 'llm', provider: 'bedrock', next: 'gone' } },
    });
    const messages = result.error!.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    expect(messages).toEqual(
      expect.arrayContaining([
        'start: unknown node "zzz"',
        'nodes.a.next: unknown node "gone"',
        'nodes.a.model_id: required for provider bedrock',
      ]),
    );
  });
});

describe('overrides', () => {
  const definition = workflowDefinitionSchema.parse({
    id: 'w',
    name: 'W',
    start: 'a',
    nodes: { a: { type: 'llm', provider: 'scripted', reply: 'x', next: 'b' }, b: { type: 'end', output: 'y' } },
  });

  it('replaces parameters without touching the stored definition', () => {
    const overridden = applyOverrides(definition, { a: { reply: 'z', token_delay_ms: 5 } });
    expect(overridden.nodes.a).toMatchObject({ reply: 'z', token_delay_ms: 5, next: 'b' });
    expect(definition.nodes.a).toMatchObject({ reply: 'x' });
  });

  it('refuses unknown nodes, edges and invalid values with field names', () => {
    try {
      applyOverrides(definition, { q: {}, a: { next: 'a', provider: 'gpt' } });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      const fields = (error as ValidationError).details.map((issue) => issue.field);
      expect(fields).toEqual(expect.arrayContaining(['overrides.q', 'overrides.a.next', 'overrides.a.provider']));
    }
  });
});

describe('callbacks', () => {
  it('signs exactly as the standardwebhooks package verifies', () => {
    const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
    const body = JSON.stringify({ status: 'completed' });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders(secret, 'msg_1', timestamp, body);
    expect(new Webhook(secret).verify(body, headers)).toEqual({ status: 'completed' });
    expect(headers['webhook-signature']).toBe(new Webhook(secret).sign('msg_1', new Date(timestamp * 1000), body));
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
  });

  it('accepts https public hosts, and loopback only when allowed', () => {
    expect(callbackUrlProblem('https://hooks.example.com/x', false)).toBeUndefined();
    expect(callbackUrlProblem('http://hooks.example.com/x', false)).toContain('https');
    expect(callbackUrlProblem('https://169.254.169.254/latest', false)).toBeDefined();
    expect(callbackUrlProblem('http://127.0.0.1:8080/x', false)).toBeDefined();
    expect(callbackUrlProblem('http://127.0.0.1:8080/x', true)).toBeUndefined();
    expect(callbackUrlProblem('http://10.0.0.1/x', true)).toBeDefined();
  });

  it('describes state machine failures for the execution error', () => {
    expect(describeFailure({ Error: 'States.Timeout' })).toBe('The approval was not answered in time');
    expect(describeFailure({ Error: 'Error', Cause: JSON.stringify({ errorMessage: 'boom', errorType: 'Error' }) })).toBe(
      'Execution error (Error): boom',
    );
    expect(describeFailure({ Error: 'X', Cause: 'plain' })).toBe('Execution error (X): plain');
  });
});

describe('scope reads', () => {
  const definitionWith = (nodes: Record<string, unknown>) =>
    workflowDefinitionSchema.parse({ id: 'w', name: 'W', start: Object.keys(nodes)[0], nodes });

  it('reads memory and history only for workflows that can see them', () => {
    const end = { done: { type: 'end', output: 'x' } };
    expect(scopeNeeds(definitionWith({ a: { type: 'llm', provider: 'scripted', reply: 'hi {{input.x}}', next: 'done' }, ...end }))).toEqual(
      { memory: false, history: false },
    );
    expect(scopeNeeds(definitionWith({ a: { type: 'memory', set: { k: '{{input.x}}' }, next: 'done' }, ...end }))).toEqual({
      memory: false,
      history: false,
    });
    expect(
      scopeNeeds(definitionWith({ a: { type: 'llm', provider: 'scripted', reply: '{{ history }} {{memory.k}}', next: 'done' }, ...end })),
    ).toEqual({ memory: true, history: true });
    expect(
      scopeNeeds(definitionWith({ a: { type: 'condition', cases: [{ if: '$exists(memory.k)', next: 'done' }], else: 'done' }, ...end })),
    ).toEqual({ memory: true, history: false });
  });
});

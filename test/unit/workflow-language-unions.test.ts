import { describe, expect, it } from 'vitest';
import { ValidationError, type FieldIssue } from '#shared/errors.ts';
import { parseDefinition } from '#workflows/definition-validation.ts';
import { applyOverrides } from '#workflows/overrides.ts';

/**
 * Parts of a definition that take one of several shapes (a scripted agent turn, an approval's `next`) are refused with
 * the problem of the shape that was meant, at its field, never a bare "Invalid input" on the whole part.
 */
const OPTIONS = { allowLoopbackTools: false, now: Date.parse('2026-11-26T00:00:00Z') };
const tools = { lookup: { type: 'http', url: 'https://api.example.com/lookup' } };

function withScript(script: unknown[]) {
  return {
    id: 'w',
    name: 'W',
    start: 'ag',
    tools,
    nodes: {
      ag: { type: 'agent', provider: 'scripted', tools: ['lookup'], handoffs: ['other'], script, next: 'done' },
      other: { type: 'agent', provider: 'scripted', script: [{ reply: 'hi' }], next: 'done' },
      done: { type: 'end', output: 'x' },
    },
  };
}

function withApprovalNext(next: unknown) {
  return {
    id: 'w',
    name: 'W',
    start: 'ask',
    nodes: { ask: { type: 'approval', message: 'ok?', next }, done: { type: 'end', output: 'x' } },
  };
}

function issuesOf(run: () => unknown): FieldIssue[] {
  try {
    run();
    return [];
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.details;
  }
}
const published = (document: unknown) => issuesOf(() => parseDefinition(document, 'w.json', OPTIONS));
const calls = (count: number) => Array.from({ length: count }, () => ({ tool: 'lookup' }));

describe('a scripted agent turn', () => {
  it("says how many tool calls a turn may make, at the turn's tool_calls", () => {
    expect(published(withScript([{ tool_calls: calls(22) }]))).toEqual([
      { field: 'w.json.nodes.ag.script.0.tool_calls', message: 'at most 16 tool calls per turn, got 22' },
    ]);
    expect(published(withScript([{ tool_calls: calls(16) }]))).toEqual([]);
  });

  it("says so in an execution's overrides too", () => {
    const definition = parseDefinition(withScript([{ reply: 'x' }]), 'w.json', OPTIONS);
    expect(issuesOf(() => applyOverrides(definition, { ag: { script: [{ reply: 'a' }, { tool_calls: calls(17) }] } }))).toEqual([
      { field: 'overrides.ag.script.1.tool_calls', message: 'at most 16 tool calls per turn, got 17' },
    ]);
  });

  it('reports a problem inside the turn at its own field', () => {
    expect(published(withScript([{ reply: 5 }]))).toEqual([
      { field: 'w.json.nodes.ag.script.0.reply', message: 'Invalid input: expected string, received number' },
    ]);
    expect(published(withScript([{ tool_calls: [{ tool: 'lookup', arguments: 5 }] }]))).toEqual([
      { field: 'w.json.nodes.ag.script.0.tool_calls.0.arguments', message: 'Invalid input: expected record, received number' },
    ]);
    expect(published(withScript([{ handoff: 'other', typo: 1 }]))).toEqual([
      { field: 'w.json.nodes.ag.script.0', message: 'Unrecognized key: "typo"' },
    ]);
    expect(published(withScript([{ tool_calls: [] }]))).toEqual([
      { field: 'w.json.nodes.ag.script.0.tool_calls', message: 'Too small: expected array to have >=1 items' },
    ]);
  });

  it('names the shapes a turn may take when it takes none, or more than one', () => {
    const message = 'a turn is an object with exactly one of reply, tool_calls or handoff';
    expect(published(withScript([{}]))).toEqual([{ field: 'w.json.nodes.ag.script.0', message }]);
    expect(published(withScript(['hello']))).toEqual([{ field: 'w.json.nodes.ag.script.0', message }]);
    expect(published(withScript([{ reply: 'x', handoff: 'other' }]))).toEqual([{ field: 'w.json.nodes.ag.script.0', message }]);
  });

  it('still plays each shape as written', () => {
    const definition = parseDefinition(
      withScript([{ tool_calls: [{ tool: 'lookup' }] }, { handoff: 'other' }, { reply: 'done' }]),
      'w.json',
      OPTIONS,
    );
    expect(definition.nodes.ag).toMatchObject({
      script: [{ tool_calls: [{ tool: 'lookup', arguments: {} }] }, { handoff: 'other' }, { reply: 'done' }],
    });
  });
});

describe("an approval's next", () => {
  it('reports a problem of the object form at its field', () => {
    expect(published(withApprovalNext({}))).toEqual([
      { field: 'w.json.nodes.ask.next.approved', message: 'Invalid input: expected string, received undefined' },
    ]);
    expect(published(withApprovalNext({ approved: 'done', denied: 'done' }))).toEqual([
      { field: 'w.json.nodes.ask.next', message: 'Unrecognized key: "denied"' },
    ]);
  });

  it('names both forms when it is neither', () => {
    expect(published(withApprovalNext(5))).toEqual([
      { field: 'w.json.nodes.ask.next', message: 'a node id, or an object with approved (and optionally rejected) node ids' },
    ]);
    expect(published(withApprovalNext(['done']))).toEqual([
      { field: 'w.json.nodes.ask.next', message: 'a node id, or an object with approved (and optionally rejected) node ids' },
    ]);
  });

  it('still takes a node id or the two branches', () => {
    expect(published(withApprovalNext('done'))).toEqual([]);
    expect(published(withApprovalNext({ approved: 'done', rejected: 'done' }))).toEqual([]);
    expect(published(withApprovalNext('bad id!'))).toEqual([
      { field: 'w.json.nodes.ask.next', message: 'must be 1-64 letters, digits, _ or -' },
    ]);
  });
});

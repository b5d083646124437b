import { describe, expect, it } from 'vitest';
import { ValidationError, type FieldIssue } from '#shared/errors.ts';
import { parseDefinition } from '#workflows/definition-validation.ts';

/**
 * A tool's headers are sent as they are written (placeholders filled): publish refuses a header the outbound request
 * could never carry, naming the tool and the header, instead of every call of the tool failing.
 */
const OPTIONS = { allowLoopbackTools: false, now: Date.parse('2026-11-26T00:00:00Z') };

function definitionWith(tools: Record<string, unknown>) {
  return {
    id: 'w',
    name: 'W',
    start: 'ag',
    tools,
    nodes: {
      ag: { type: 'agent', provider: 'scripted', tools: Object.keys(tools), script: [{ reply: 'ok' }], next: 'done' },
      done: { type: 'end', output: 'x' },
    },
  };
}
const httpTool = (headers: Record<string, string>) => ({ type: 'http', url: 'https://api.example.com/weather', headers });
const mcpTool = (headers: Record<string, string>) => ({ type: 'mcp', url: 'https://mcp.example.com/mcp', tools: ['search'], headers });

function issuesOf(document: unknown): FieldIssue[] {
  try {
    parseDefinition(document, 'w.json', OPTIONS);
    return [];
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.details;
  }
}

describe('tool headers at publish', () => {
  it('refuses a value holding CR or LF, naming the tool and the header', () => {
    expect(issuesOf(definitionWith({ weather: httpTool({ 'X-Token': 'abc\r\nX-Injected: 1' }) }))).toEqual([
      {
        field: 'w.json.tools.weather.headers.X-Token',
        message: 'the value holds a carriage return (CR), which no HTTP header value may hold: every call of this tool would fail',
      },
    ]);
    expect(issuesOf(definitionWith({ weather: httpTool({ Authorization: 'Bearer {{secret.api_key}}\n' }) }))).toEqual([
      {
        field: 'w.json.tools.weather.headers.Authorization',
        message: 'the value holds a line feed (LF), which no HTTP header value may hold: every call of this tool would fail',
      },
    ]);
  });

  it('refuses NUL, other control characters and characters beyond one byte in a value, for MCP servers too', () => {
    const fields = (headers: Record<string, string>) => issuesOf(definitionWith({ search: mcpTool(headers) }));
    expect(fields({ 'X-A': 'a\u0000b' })).toEqual([
      {
        field: 'w.json.tools.search.headers.X-A',
        message: 'the value holds a NUL byte, which no HTTP header value may hold: every call of this tool would fail',
      },
    ]);
    expect(fields({ 'X-A': 'a\u0007b' })[0]?.message).toBe(
      'the value holds the control character U+0007, which no HTTP header value may hold: every call of this tool would fail',
    );
    expect(fields({ 'X-A': '5 €' })[0]?.message).toBe(
      'the value holds "€" (U+20AC), which no HTTP header value may hold: every call of this tool would fail',
    );
  });

  it('refuses a name that is not an HTTP token, saying which character', () => {
    expect(issuesOf(definitionWith({ weather: httpTool({ 'X Token': 'v', 'X-Ok': 'v' }) }))).toEqual([
      {
        field: 'w.json.tools.weather.headers.X Token',
        message: 'not a header name: it holds " " (U+0020), and a name is letters, digits and !#$%&\'*+-.^_`|~ only',
      },
    ]);
    expect(issuesOf(definitionWith({ weather: httpTool({ 'X-Token:': 'v' }) }))[0]?.field).toBe('w.json.tools.weather.headers.X-Token:');
    expect(issuesOf(definitionWith({ weather: httpTool({ '': 'v' }) }))).toEqual([
      { field: 'w.json.tools.weather.headers.', message: 'not a header name: it is empty' },
    ]);
  });

  it("accepts what Node's HTTP client sends: tabs, spaces, Latin-1 and placeholders", () => {
    const headers = {
      'X-Api-Key': '{{secret.api_key}}',
      'X-City': '{{args.city}}',
      Accept: 'application/json; q=0.9',
      'X-Tab': 'a\tb',
      'X-Latin': 'café',
    };
    expect(issuesOf(definitionWith({ weather: httpTool(headers), search: mcpTool({ "!#$%&'*+-.^_`|~09azAZ": 'v' }) }))).toEqual([]);
  });

  it("refuses what Node's HTTP client throws on, and accepts only what fetch's Headers takes too", () => {
    const names: Record<string, boolean> = {
      ok: true,
      'X-Ok': true,
      'a b': false,
      'a:b': false,
      'a"b': false,
      ä: false,
      'a\tb': false,
      '(x)': false,
      'a/b': false,
      'a@b': false,
    };
    const values: Record<string, boolean> = {
      '': true,
      plain: true,
      ' spaced ': true,
      'a\tb': true,
      é: true,
      '\u00ff': true,
      '\u0100': false,
      '\u007f': false,
      '\u0001': false,
      'a\rb': false,
      'x\n': false,
      '\u0000': false,
      '😀': false,
    };
    for (const [name, sendable] of Object.entries(names)) {
      expect(issuesOf(definitionWith({ weather: httpTool({ [name]: 'v' }) })).length === 0, JSON.stringify(name)).toBe(sendable);
      if (sendable) expect(() => new Headers({ [name]: 'v' })).not.toThrow();
    }
    for (const [value, sendable] of Object.entries(values)) {
      expect(issuesOf(definitionWith({ weather: httpTool({ 'X-V': value }) })).length === 0, JSON.stringify(value)).toBe(sendable);
      if (sendable) expect(() => new Headers({ 'X-V': value })).not.toThrow();
    }
  });
});

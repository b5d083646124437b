import { Ajv, type ValidateFunction } from 'ajv';
import { resolvedAddressProblem } from '#executions/callback-url.ts';
import { MAX_TOOL_RESULT_BYTES } from '#shared/limits.ts';
import { toolUrlProblem } from '#shared/public-url.ts';
import type { HttpTool } from '#workflows/definition-schema.ts';
import type { ToolCaller } from './agent-runner.ts';

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

/**
 * HTTP tools. The model's arguments are checked against the tool's JSON Schema (ajv) before anything is sent;
 * `{{args.x}}` in the URL are URL-encoded, in headers kept as text; non-GET calls send the arguments as the JSON
 * body. The rendered URL passes the same public-address guard as callbacks, resolved at call time; redirects
 * are not followed; the call has the tool's deadline; the answer is cut to 64 KB before the model sees it.
 * Every failure is an answer for the model (`ok: false`), so the run goes on.
 */
export function createHttpTools(options: { allowLoopback: boolean; fetch?: typeof fetch }): ToolCaller {
  const ajv = new Ajv({ allErrors: true, strict: false });
  const validators = new Map<string, ValidateFunction>();
  const validatorOf = (schema: unknown) => {
    const key = JSON.stringify(schema);
    let validate = validators.get(key);
    if (!validate) validators.set(key, (validate = ajv.compile(schema as object)));
    return validate;
  };
  const send = options.fetch ?? fetch;

  return {
    async call(tool: HttpTool, args: Record<string, unknown>) {
      let validate: ValidateFunction;
      try {
        validate = validatorOf(tool.parameters);
      } catch (error) {
        return { ok: false, error: `the tool's parameters are not a valid JSON Schema: ${(error as Error).message}` };
      }
      if (!validate(args)) {
        return { ok: false, error: `invalid arguments: ${ajv.errorsText(validate.errors, { dataVar: 'arguments' })}` };
      }
      const value = (path: string) => (path.startsWith('args.') ? args[path.slice('args.'.length)] : undefined);
      const url = tool.url.replace(PLACEHOLDER, (_, path: string) => encodeURIComponent(text(value(path))));
      const problem = toolUrlProblem(url, options.allowLoopback) ?? (await resolvedAddressProblem(url, options.allowLoopback).catch(() => 'host does not resolve'));
      if (problem) return { ok: false, error: `tool URL refused: ${problem}` };
      const headers = Object.fromEntries(Object.entries(tool.headers).map(([name, template]) => [name, template.replace(PLACEHOLDER, (_, path: string) => text(value(path)))]));
      try {
        const response = await send(url, {
          method: tool.method,
          headers: tool.method === 'GET' ? headers : { 'content-type': 'application/json', ...headers },
          body: tool.method === 'GET' ? undefined : JSON.stringify(args),
          redirect: 'manual',
          signal: AbortSignal.timeout(tool.timeout_ms),
        });
        const body = cut(await response.text());
        if (response.status < 200 || response.status > 299) return { ok: false, error: `HTTP ${response.status}${body ? `: ${body.slice(0, 200)}` : ''}` };
        return { ok: true, result: parsed(body) };
      } catch (error) {
        const name = (error as Error).name;
        return { ok: false, error: name === 'TimeoutError' ? `timed out after ${tool.timeout_ms} ms` : `request failed (${name})` };
      }
    },
  };
}

const text = (value: unknown) => (value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));

function cut(body: string): string {
  if (Buffer.byteLength(body, 'utf8') <= MAX_TOOL_RESULT_BYTES) return body;
  return Buffer.from(body, 'utf8').subarray(0, MAX_TOOL_RESULT_BYTES).toString('utf8').replace(/\uFFFD$/, '');
}

function parsed(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

import { Ajv, type ValidateFunction } from 'ajv';
import { boundedCache } from '#shared/bounded-cache.ts';
import { CACHED_TOOL_SCHEMAS, MAX_TOOL_RESULT_BYTES } from '#shared/limits.ts';
import { pinnedFetch, type FetchLike } from '#shared/network/pinned-fetch.ts';
import { toolUrlProblem } from '#shared/network/public-url.ts';
import type { McpTool, ToolDefinition } from '#workflows/definition-schema.ts';
import { callHttpTool, cutToResultLimit } from './http-tool.ts';
import type { McpSession } from './mcp-session.ts';
import { fillSecrets, MissingSecretError, secretScope, type SecretScope } from './tool-secrets.ts';
import type { SecretSource, ToolAnswer, ToolDescriptor, ToolKit, ToolboxRequest } from './tool-types.ts';

export interface ToolKitOptions {
  /** Test-only (ALLOW_LOOPBACK_TOOLS): tools on a loopback host. */
  allowLoopback: boolean;
  secrets: SecretSource;
  fetch?: FetchLike;
}

type Route = { kind: 'http'; tool: Extract<ToolDefinition, { type: 'http' }> } | { kind: 'mcp'; server: string; entry: McpTool };

/**
 * Agents' tools. Every call's arguments are checked against the tool's JSON Schema (ajv) before anything is sent,
 * and every answer, failure or not, is masked of the project's secrets and then cut to 64 KB before the model, an
 * event or a record sees it.
 */
export function createToolKit(options: ToolKitOptions): ToolKit {
  const ajv = new Ajv({ allErrors: true, strict: false });
  // The kit lives as long as its environment and meets every tool published: ajv keeps each schema it compiled too,
  // so one leaving this cache leaves ajv's.
  const validators = boundedCache<string, ValidateFunction>({
    maxEntries: CACHED_TOOL_SCHEMAS,
    evicted: (_key, validate) => {
      if (typeof validate.schema === 'object') ajv.removeSchema(validate.schema);
    },
  });
  const validatorOf = (schema: unknown) => {
    const key = JSON.stringify(schema);
    let validate = validators.get(key);
    if (!validate) validators.set(key, (validate = ajv.compile(schema as object)));
    return validate;
  };
  const fetch = options.fetch ?? pinnedFetch({ allowLoopback: options.allowLoopback });

  const argumentsProblem = (schema: unknown, args: Record<string, unknown>): string | undefined => {
    let validate: ValidateFunction;
    try {
      validate = validatorOf(schema);
    } catch (error) {
      return `the tool's parameters are not a valid JSON Schema: ${(error as Error).message}`;
    }
    return validate(args) ? undefined : `invalid arguments: ${ajv.errorsText(validate.errors, { dataVar: 'arguments' })}`;
  };

  return {
    open(request: ToolboxRequest) {
      const secrets = secretScope(options.secrets, request.projectId);
      const routes = routesOf(request);
      const sessions = new Map<string, Promise<McpSession>>();
      const sessionOf = (server: string, entry: McpTool) => {
        let session = sessions.get(server);
        if (!session) sessions.set(server, (session = connect(entry, secrets, fetch, options.allowLoopback)));
        return session;
      };

      const call = async (name: string, args: Record<string, unknown>): Promise<ToolAnswer> => {
        const route = routes.get(name);
        if (!route) return { ok: false, error: `unknown tool "${name}"` };
        if (route.kind === 'http') {
          const problem = argumentsProblem(route.tool.parameters, args);
          return problem
            ? { ok: false, error: problem }
            : callHttpTool(route.tool, args, { fetch, secrets, allowLoopback: options.allowLoopback });
        }
        const session = await sessionOf(route.server, route.entry);
        if (!session.has(name)) return { ok: false, error: `the MCP server ${route.server} lists no tool "${name}"` };
        const problem = argumentsProblem(session.inputSchemaOf(name), args);
        return problem ? { ok: false, error: problem } : session.call(name, args);
      };

      return {
        async describe(): Promise<ToolDescriptor[]> {
          const described: ToolDescriptor[] = [];
          const servers = new Map<string, McpTool>();
          for (const [name, route] of routes) {
            if (route.kind === 'http')
              described.push({ name, description: route.tool.description, inputSchema: route.tool.parameters as Record<string, unknown> });
            else servers.set(route.server, route.entry);
          }
          for (const [server, entry] of servers) {
            // A server that cannot be reached shows no tools; the model works with the others.
            const session = await sessionOf(server, entry).catch(() => undefined);
            // The server writes these and the model reads them: a server echoing its key there is masked too.
            if (session)
              for (const tool of session.describe())
                described.push({
                  ...tool,
                  description: secrets.mask(tool.description),
                  inputSchema: secrets.maskValue(tool.inputSchema) as Record<string, unknown>,
                });
          }
          return described;
        },
        async call(name, args) {
          try {
            return maskedAnswer(await call(name, args), secrets);
          } catch (error) {
            return { ok: false, error: describeError(error, secrets) };
          }
        },
        async close() {
          await Promise.all([...sessions.values()].map((session) => session.then((open) => open.close()).catch(() => undefined)));
        },
      };
    },
  };
}

/** The names the model sees: an HTTP tool by its entry name, an MCP server's tools by their own names. */
function routesOf(request: ToolboxRequest): Map<string, Route> {
  const routes = new Map<string, Route>();
  const tools = request.definition.tools ?? {};
  for (const entryName of request.toolNames) {
    const entry = Object.hasOwn(tools, entryName) ? tools[entryName] : undefined;
    if (entry?.type === 'http') routes.set(entryName, { kind: 'http', tool: entry });
    else if (entry?.type === 'mcp') for (const tool of entry.tools) routes.set(tool, { kind: 'mcp', server: entryName, entry });
  }
  return routes;
}

async function connect(entry: McpTool, secrets: SecretScope, fetch: FetchLike, allowLoopback: boolean): Promise<McpSession> {
  const values = await secrets.resolve([entry.url, ...Object.values(entry.headers)]);
  const url = fillSecrets(entry.url, values);
  const problem = toolUrlProblem(url, allowLoopback);
  if (problem) throw new Error(`tool URL refused: ${problem}`);
  const headers = Object.fromEntries(Object.entries(entry.headers).map(([name, template]) => [name, fillSecrets(template, values)]));
  const { openMcpSession } = await import('./mcp-session.ts');
  return openMcpSession(entry, url, headers, fetch);
}

/**
 * Masked first, cut after: a cut text holds no start of a secret the masking would have caught whole. Strings are
 * masked one by one (escapes undone); the JSON text is checked again for a value spread across strings and keys.
 */
function maskedAnswer(answer: ToolAnswer, secrets: SecretScope): ToolAnswer {
  if (!answer.ok) return { ok: false, error: cutToResultLimit(maskedHead(answer.error, MAX_TOOL_RESULT_BYTES, secrets)) };
  if (typeof answer.result === 'string')
    return { ok: true, result: cutToResultLimit(maskedHead(answer.result, MAX_TOOL_RESULT_BYTES, secrets)) };
  const result = secrets.maskValue(answer.result);
  const json = JSON.stringify(result ?? null);
  const checked = secrets.mask(json);
  if (checked === json && Buffer.byteLength(json, 'utf8') <= MAX_TOOL_RESULT_BYTES) return { ok: true, result };
  return { ok: true, result: cutToResultLimit(checked) };
}

/**
 * The first `units` of a text, masked: read one longest form further, a secret crossing the cut is masked whole, and
 * the rest (an error body can be megabytes) is not worth masking.
 */
function maskedHead(text: string, units: number, secrets: SecretScope): string {
  return secrets.mask(text.slice(0, units + secrets.longestForm()), units);
}

/** An error's message may quote the server (an HTTP error body): masked before it is shortened. */
function describeError(error: unknown, secrets: SecretScope): string {
  if (error instanceof MissingSecretError) return error.message;
  const name = (error as Error | undefined)?.name ?? 'Error';
  const message = String((error as Error | undefined)?.message ?? '');
  if (name === 'TimeoutError' || /timed out|RequestTimeout/i.test(message)) return 'timed out';
  return maskedHead(`${name}: ${message}`, name.length + 302, secrets);
}

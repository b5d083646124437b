import { MAX_TOOL_RESULT_BYTES } from '#shared/limits.ts';
import { AddressRefusedError, type FetchLike } from '#shared/pinned-fetch.ts';
import { toolUrlProblem } from '#shared/public-url.ts';
import type { HttpTool } from '#workflows/definition-schema.ts';
import { fillSecrets, MissingSecretError, type SecretScope } from './tool-secrets.ts';
import type { ToolAnswer } from './tool-types.ts';

const ARGUMENT_PLACEHOLDER = /\{\{\s*args\.([A-Za-z0-9_.-]+)\s*\}\}/g;

/**
 * One HTTP tool call (arguments already checked against its schema). `{{args.x}}` in the URL are URL-encoded, in
 * headers kept as text; `{{secret.NAME}}` is read at call time. Non-GET calls send the arguments as the JSON
 * body. The rendered URL passes the public-address rule again, resolved and pinned by the fetch; redirects are
 * not followed; the call has the tool's deadline; the answer is cut to 64 KB before the model sees it.
 */
export async function callHttpTool(
  tool: HttpTool,
  args: Record<string, unknown>,
  context: { fetch: FetchLike; secrets: SecretScope; allowLoopback: boolean },
): Promise<ToolAnswer> {
  let secrets: ReadonlyMap<string, string>;
  try {
    secrets = await context.secrets.resolve([tool.url, ...Object.values(tool.headers)]);
  } catch (error) {
    return { ok: false, error: error instanceof MissingSecretError ? error.message : 'secrets could not be read' };
  }
  const withArgs = (template: string, encode: (text: string) => string) =>
    fillSecrets(template.replace(ARGUMENT_PLACEHOLDER, (_, name: string) => encode(text(args[name]))), secrets);
  const url = withArgs(tool.url, encodeURIComponent);
  // The URL holds secrets now: a refusal says why, never what the URL was.
  const problem = toolUrlProblem(url, context.allowLoopback);
  if (problem) return { ok: false, error: `tool URL refused: ${context.secrets.mask(problem)}` };
  const headers = Object.fromEntries(Object.entries(tool.headers).map(([name, template]) => [name, withArgs(template, (value) => value)]));
  try {
    const response = await context.fetch(url, {
      method: tool.method,
      headers: tool.method === 'GET' ? headers : { 'content-type': 'application/json', ...headers },
      body: tool.method === 'GET' ? undefined : JSON.stringify(args),
      signal: AbortSignal.timeout(tool.timeout_ms),
    });
    const body = context.secrets.mask(await cappedText(response));
    if (response.status < 200 || response.status > 299) return { ok: false, error: `HTTP ${response.status}${body ? `: ${body.slice(0, 200)}` : ''}` };
    return { ok: true, result: parsed(body) };
  } catch (error) {
    if (error instanceof AddressRefusedError) return { ok: false, error: `tool URL refused: ${error.reason}` };
    const name = (error as Error).name;
    return { ok: false, error: name === 'TimeoutError' ? `timed out after ${tool.timeout_ms} ms` : `request failed (${name})` };
  }
}

/** Reads at most the result limit and drops the rest unread: a tool answering gigabytes costs the step nothing more. */
async function cappedText(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  while (bytes <= MAX_TOOL_RESULT_BYTES) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    bytes += value.byteLength;
  }
  if (bytes > MAX_TOOL_RESULT_BYTES) await reader.cancel().catch(() => undefined);
  return cutToResultLimit(Buffer.concat(chunks).toString('utf8'));
}

const text = (value: unknown) => (value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));

export function cutToResultLimit(body: string): string {
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

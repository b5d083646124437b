import { MAX_TOOL_RESULT_BYTES } from '#shared/limits.ts';
import { AddressRefusedError, type FetchLike } from '#shared/network/pinned-fetch.ts';
import { toolUrlProblem } from '#shared/network/public-url.ts';
import type { HttpTool } from '#workflows/definition-schema.ts';
import { fillSecrets, MissingSecretError, type SecretScope } from './tool-secrets.ts';
import type { ToolAnswer } from './tool-types.ts';

const ARGUMENT_PLACEHOLDER = /\{\{\s*args\.([A-Za-z0-9_.-]+)\s*\}\}/g;

/**
 * One HTTP tool call (arguments already checked against its schema). `{{args.x}}` in the URL are URL-encoded, in
 * headers kept as text; `{{secret.NAME}}` is read at call time. Non-GET calls send the arguments as the JSON
 * body. The rendered URL passes the public-address rule again, resolved and pinned by the fetch; redirects are
 * not followed; the call has the tool's deadline; the answer is masked of the secrets, then cut to 64 KB, before
 * the model sees it.
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
    fillSecrets(
      template.replace(ARGUMENT_PLACEHOLDER, (_, name: string) => encode(text(args[name]))),
      secrets,
    );
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
    const body = await maskedBody(response, context.secrets);
    if (response.status < 200 || response.status > 299) {
      const shown = body.text();
      return { ok: false, error: `HTTP ${response.status}${shown ? `: ${shown.slice(0, 200)}` : ''}` };
    }
    return { ok: true, result: body.result() };
  } catch (error) {
    if (error instanceof AddressRefusedError) return { ok: false, error: `tool URL refused: ${error.reason}` };
    const name = (error as Error).name;
    return { ok: false, error: name === 'TimeoutError' ? `timed out after ${tool.timeout_ms} ms` : `request failed (${name})` };
  }
}

/**
 * The answer masked of the scope's secrets, then cut to the result limit. Read past the limit by room for one secret
 * in its longest form, so a secret crossing the cut is masked whole; the text after that room is dropped unread (a
 * tool answering gigabytes costs the step nothing more). An answer within the limit that parses as JSON is masked
 * string by string, where escapes are already undone.
 */
async function maskedBody(response: Response, secrets: SecretScope): Promise<{ text(): string; result(): unknown }> {
  // A UTF-16 unit takes at most 3 UTF-8 bytes; 4 more for a character the read cut in two.
  const room = 3 * secrets.longestForm() + 4;
  const { bytes, whole } = await readUpTo(response, MAX_TOOL_RESULT_BYTES + room);
  const body = bytes.toString('utf8');
  // Short of the end of what was read, the last units may open a secret whose end was never read: drop them unmasked.
  const maskedText = () => cutToResultLimit(secrets.mask(body, whole ? body.length : Math.max(0, body.length - secrets.longestForm())));
  if (!whole || bytes.byteLength > MAX_TOOL_RESULT_BYTES) return { text: maskedText, result: maskedText };
  return {
    text: maskedText,
    result() {
      try {
        return secrets.maskValue(JSON.parse(body));
      } catch {
        return maskedText();
      }
    },
  };
}

async function readUpTo(response: Response, limit: number): Promise<{ bytes: Buffer; whole: boolean }> {
  if (!response.body) return { bytes: Buffer.alloc(0), whole: true };
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let read = 0;
  while (read <= limit) {
    const { done, value } = await reader.read();
    if (done) return { bytes: Buffer.concat(chunks), whole: true };
    chunks.push(value);
    read += value.byteLength;
  }
  await reader.cancel().catch(() => undefined);
  return { bytes: Buffer.concat(chunks).subarray(0, limit), whole: false };
}

const text = (value: unknown) => (value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));

export function cutToResultLimit(body: string): string {
  if (Buffer.byteLength(body, 'utf8') <= MAX_TOOL_RESULT_BYTES) return body;
  return Buffer.from(body, 'utf8')
    .subarray(0, MAX_TOOL_RESULT_BYTES)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}

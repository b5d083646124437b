import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '#shared/network/pinned-fetch.ts';
import type { McpTool } from '#workflows/definition-schema.ts';
import type { ToolAnswer, ToolDescriptor } from './tool-types.ts';

const CLIENT_INFO = { name: 'workflow-ingest-agent', version: '1.0.0' };

/**
 * One agent's session with one MCP server over Streamable HTTP (the official SDK client): connected and listed
 * on first use, then reused for every call the agent makes, and ended when the agent is done (or when connecting
 * or listing failed). Only the tools of the entry's allow-list are visible, with the schemas the server lists.
 */
export async function openMcpSession(server: McpTool, url: string, headers: Record<string, string>, fetch: FetchLike) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch,
    requestInit: { headers },
    // A tool call is one request; a dropped SSE stream is the call's failure, not something to resume for minutes.
    reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
  });
  const client = new Client(CLIENT_INFO);
  const options = { timeout: server.timeout_ms, maxTotalTimeout: server.timeout_ms };
  const end = () => endSession(client, transport, server.timeout_ms);
  let listed: Awaited<ReturnType<Client['listTools']>>;
  try {
    await client.connect(transport, options);
    listed = await client.listTools(undefined, options);
  } catch (error) {
    await end();
    throw error;
  }
  const allowed = new Set(server.tools);
  const tools = new Map(listed.tools.filter((tool) => allowed.has(tool.name)).map((tool) => [tool.name, tool]));

  return {
    describe(): ToolDescriptor[] {
      return [...tools.values()].map((tool) => ({ name: tool.name, description: tool.description ?? '', inputSchema: tool.inputSchema }));
    },
    has: (name: string) => tools.has(name),
    inputSchemaOf: (name: string) => tools.get(name)?.inputSchema,
    async call(name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
      const result = await client.callTool({ name, arguments: args }, undefined, options);
      const text = contentText(result.content);
      if (result.isError) return { ok: false, error: text || 'the tool reported an error' };
      return { ok: true, result: result.structuredContent ?? parsedText(text, result.content) };
    },
    close: end,
  };
}

/**
 * Closing the client only drops the connection: the server keeps the session until it is told, with the DELETE the
 * Streamable HTTP transport defines, or every execution would leave one open there. A server without explicit termination
 * answers 405, which the SDK takes as done; any other failure is the server's to clean up and does not fail the execution.
 * The DELETE has the tool's timeout: closing the client aborts one still pending, so a silent server cannot hold
 * the step.
 */
async function endSession(client: Client, transport: StreamableHTTPClientTransport, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
  try {
    await Promise.race([transport.terminateSession().catch(() => undefined), deadline]);
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => undefined);
  }
}

export type McpSession = Awaited<ReturnType<typeof openMcpSession>>;

function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .filter(
      (block): block is { type: 'text'; text: string } =>
        (block as { type?: unknown }).type === 'text' && typeof (block as { text?: unknown }).text === 'string',
    )
    .map((block) => block.text)
    .join('\n');
}

/** One JSON text block is the usual shape of a tool's answer; anything else goes to the model as it came. */
function parsedText(text: string, content: unknown): unknown {
  if (Array.isArray(content) && content.length === 1 && text) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return content;
}

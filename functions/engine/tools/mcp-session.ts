import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '#shared/pinned-fetch.ts';
import type { McpTool } from '#workflows/definition-schema.ts';
import type { ToolAnswer, ToolDescriptor } from './tool-types.ts';

const CLIENT_INFO = { name: 'workflow-ingest-agent', version: '1.0.0' };

/**
 * One agent's session with one MCP server over Streamable HTTP (the official SDK client): connected and listed
 * on first use, then reused for every call the agent makes, and closed when the agent is done. Only the tools of
 * the entry's allow-list are visible, with the schemas the server lists.
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
  await client.connect(transport, options);
  const listed = await client.listTools(undefined, options);
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
    close: () => client.close(),
  };
}

export type McpSession = Awaited<ReturnType<typeof openMcpSession>>;

function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .filter((block): block is { type: 'text'; text: string } => (block as { type?: unknown }).type === 'text' && typeof (block as { text?: unknown }).text === 'string')
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

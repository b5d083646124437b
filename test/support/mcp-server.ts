import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * A Model Context Protocol server over Streamable HTTP, built with the official SDK (stateless: a server and a
 * transport per request), with a CRM's tools: `lookup_customer` (allowed to agents by the tests' allow-lists),
 * `delete_customer` (never allowed), and `explode` (reports an error). It records each call's headers.
 */
export async function startMcpServer(): Promise<{ url: string; calls: { tool: string; args: unknown; headers: IncomingHttpHeaders }[]; close(): Promise<void> }> {
  const calls: { tool: string; args: unknown; headers: IncomingHttpHeaders }[] = [];
  const mcpServerFor = (headers: IncomingHttpHeaders) => {
    const server = new McpServer({ name: 'crm', version: '1.0.0' });
    server.registerTool(
      'lookup_customer',
      { description: 'A customer by id', inputSchema: { id: z.string().min(1) } },
      ({ id }) => {
        calls.push({ tool: 'lookup_customer', args: { id }, headers });
        return { content: [{ type: 'text', text: JSON.stringify({ id, name: `Customer ${id}`, tier: 'gold', seen_key: headers['x-crm-key'] ?? null }) }] };
      },
    );
    server.registerTool('delete_customer', { description: 'Deletes a customer', inputSchema: { id: z.string() } }, ({ id }) => {
      calls.push({ tool: 'delete_customer', args: { id }, headers });
      return { content: [{ type: 'text', text: 'deleted' }] };
    });
    server.registerTool('explode', { description: 'Always fails', inputSchema: {} }, () => {
      calls.push({ tool: 'explode', args: {}, headers });
      return { content: [{ type: 'text', text: 'the CRM is down' }], isError: true };
    });
    return server;
  };
  const http: Server = createServer((request, response) => {
    void (async () => {
      const server = mcpServerFor(request.headers);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      response.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request, response);
    })().catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    calls,
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

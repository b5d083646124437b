import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { echoOf } from './secret-echo.ts';

export interface McpServerOptions {
  /**
   * With session ids (a server and a transport per session, ended by the client's DELETE), as most real servers;
   * without, stateless (a server and a transport per request).
   */
  sessions?: boolean;
  /** How a DELETE is answered: the SDK transport's termination (default), 405 (no explicit termination), or never. */
  onDelete?: 'terminate' | 405 | 'hang';
  /** `tools/list` fails (HTTP 500), after the session is open. */
  failListing?: boolean;
}

/**
 * A Model Context Protocol server over Streamable HTTP, built with the official SDK, with a CRM's tools:
 * `lookup_customer` (allowed to agents by the tests' allow-lists), `delete_customer` (never allowed), `explode`
 * (reports an error), and `echo_key`, a careless tool that gives back the `x-key` and `x-ctl` headers and the
 * URL it was sent in the form its `encoding` argument names (see secret-echo.ts; also `structured`, `multi`,
 * `throw`, and `http-error`: the HTTP request itself fails with the key in its body). Its description quotes the
 * key too. It records each call's headers, and with sessions, which were opened and which ended.
 */
export async function startMcpServer(options: McpServerOptions = {}) {
  const calls: { tool: string; args: unknown; headers: IncomingHttpHeaders }[] = [];
  const sessions = {
    opened: [] as string[],
    closed: [] as string[],
    deletes: 0,
    abortedDeletes: 0,
    open: () => sessions.opened.length - sessions.closed.length,
  };
  const abortWaiters: (() => void)[] = [];

  const mcpServerFor = (headers: IncomingHttpHeaders) => {
    const server = new McpServer({ name: 'crm', version: '1.0.0' });
    server.registerTool('lookup_customer', { description: 'A customer by id', inputSchema: { id: z.string().min(1) } }, ({ id }) => {
      calls.push({ tool: 'lookup_customer', args: { id }, headers });
      return {
        content: [
          { type: 'text', text: JSON.stringify({ id, name: `Customer ${id}`, tier: 'gold', seen_key: headers['x-crm-key'] ?? null }) },
        ],
      };
    });
    server.registerTool('delete_customer', { description: 'Deletes a customer', inputSchema: { id: z.string() } }, ({ id }) => {
      calls.push({ tool: 'delete_customer', args: { id }, headers });
      return { content: [{ type: 'text', text: 'deleted' }] };
    });
    server.registerTool('explode', { description: 'Always fails', inputSchema: {} }, () => {
      calls.push({ tool: 'explode', args: {}, headers });
      return { content: [{ type: 'text', text: 'the CRM is down' }], isError: true };
    });
    server.registerTool(
      'echo_key',
      { description: `Echoes the key ${String(headers['x-key'] ?? '')}`, inputSchema: { encoding: z.string() } },
      ({ encoding }, extra) => {
        const requestHeaders = extra.requestInfo?.headers ?? {};
        calls.push({ tool: 'echo_key', args: { encoding }, headers: requestHeaders });
        const key = String(requestHeaders['x-key'] ?? '');
        const url = extra.requestInfo?.url;
        const ctl = String(requestHeaders['x-ctl'] ?? '');
        if (encoding === 'structured')
          return { content: [{ type: 'text', text: 'structured' }], structuredContent: { [key]: { key, ctl } } };
        if (encoding === 'multi')
          return {
            content: [
              { type: 'text', text: `key ${key}` },
              { type: 'text', text: JSON.stringify({ ctl }) },
            ],
          };
        if (encoding === 'throw') throw new Error(`cannot use ${key} or ${ctl}`);
        const echo = echoOf(encoding, key, ctl, url ? url.pathname + url.search : '');
        return { content: [{ type: 'text', text: echo.body }], ...(echo.status >= 400 ? { isError: true } : {}) };
      },
    );
    return server;
  };

  const transports = new Map<string, StreamableHTTPServerTransport>();
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const body = request.method === 'POST' ? await jsonBody(request) : undefined;
    const call = body as { method?: string; params?: { name?: string; arguments?: { encoding?: string } } } | undefined;
    if (call?.method === 'tools/call' && call.params?.name === 'echo_key' && call.params.arguments?.encoding === 'http-error') {
      // Far enough in that a client quoting the body in a 300-character error cuts through the key.
      response
        .writeHead(500, { 'content-type': 'text/plain' })
        .end(`${'z'.repeat(245)}${String(request.headers['x-key'])} ${String(request.headers['x-key'])}`);
      return;
    }
    if (options.failListing && call?.method === 'tools/list')
      return void response.writeHead(500, { 'content-type': 'text/plain' }).end('listing is down');
    if (request.method === 'DELETE') {
      sessions.deletes += 1;
      if (options.onDelete === 405) return void response.writeHead(405, { allow: 'GET, POST' }).end();
      if (options.onDelete === 'hang') {
        request.on('close', () => {
          sessions.abortedDeletes += 1;
          abortWaiters.splice(0).forEach((wake) => wake());
        });
        return;
      }
    }
    if (!options.sessions) {
      const server = mcpServerFor(request.headers);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      response.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request, response, body);
      return;
    }
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const transport = transports.get(sessionId);
      if (!transport) return void response.writeHead(404).end();
      await transport.handleRequest(request, response, body);
      return;
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports.set(id, transport);
        sessions.opened.push(id);
      },
      onsessionclosed: (id) => {
        transports.delete(id);
        sessions.closed.push(id);
      },
    });
    await mcpServerFor(request.headers).connect(transport);
    await transport.handleRequest(request, response, body);
  };
  const http: Server = createServer((request, response) => void handle(request, response).catch(() => response.destroy()));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    calls,
    sessions,
    /** Resolves when the client gives up a DELETE the server never answers (onDelete 'hang'). */
    deleteAborted: () => new Promise<void>((resolve) => (sessions.abortedDeletes > 0 ? resolve() : abortWaiters.push(resolve))),
    close: async () => {
      await Promise.all([...transports.values()].map((transport) => transport.close()));
      await new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      });
    },
  };
}

async function jsonBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

import { afterEach, describe, expect, it } from 'vitest';
import { createToolKit } from '#engine/tools/toolbox.ts';
import { workflowShape, type WorkflowDefinition } from '#workflows/definition-schema.ts';
import { startMcpServer, type McpServerOptions } from '../support/mcp-server.ts';

/**
 * MCP sessions end when the agent is done: the tool kit sends the DELETE Streamable HTTP defines, against a server
 * built with the official SDK that keeps sessions (StreamableHTTPServerTransport with session ids), so no run leaves
 * a session open there. A server refusing the DELETE, or never answering it, does not fail or hold the agent.
 */
const kit = createToolKit({ allowLoopback: true, secrets: { values: () => Promise.resolve(new Map([['KEY', 'k-1']])) } });
let servers: Awaited<ReturnType<typeof startMcpServer>>[] = [];

async function server(options: McpServerOptions) {
  const started = await startMcpServer({ sessions: true, ...options });
  servers.push(started);
  return started;
}
afterEach(async () => {
  await Promise.all(servers.map((started) => started.close()));
  servers = [];
});

const definition = (url: string, timeoutMs = 10_000): WorkflowDefinition =>
  workflowShape.parse({
    id: 'crm',
    name: 'CRM',
    start: 'agent',
    tools: { crm: { type: 'mcp', url, headers: { 'x-key': '{{secret.KEY}}' }, tools: ['lookup_customer'], timeout_ms: timeoutMs } },
    nodes: {
      agent: { type: 'agent', provider: 'scripted', tools: ['crm'], next: 'done', script: [{ reply: 'x' }] },
      done: { type: 'end', output: 'x' },
    },
  });

describe('MCP sessions', () => {
  it('ends each session with a DELETE when its toolbox closes: four toolboxes, four sessions, none left open', async () => {
    const mcp = await server({});
    for (let i = 0; i < 4; i += 1) {
      const toolbox = kit.open({ definition: definition(mcp.url), toolNames: ['crm'], projectId: 'p' });
      expect(await toolbox.call('lookup_customer', { id: `c-${i}` })).toMatchObject({ ok: true, result: { id: `c-${i}` } });
      await toolbox.close();
      expect(mcp.sessions.open()).toBe(0);
    }
    expect(mcp.sessions.opened).toHaveLength(4);
    expect(mcp.sessions.closed).toEqual(mcp.sessions.opened);
    expect(mcp.sessions.deletes).toBe(4);
  });

  it('ends a session that was only listed, and one whose listing failed', async () => {
    const listed = await server({});
    const toolbox = kit.open({ definition: definition(listed.url), toolNames: ['crm'], projectId: 'p' });
    expect((await toolbox.describe()).map((tool) => tool.name)).toEqual(['lookup_customer']);
    await toolbox.close();
    expect([listed.sessions.opened.length, listed.sessions.open()]).toEqual([1, 0]);

    const failing = await server({ failListing: true });
    const broken = kit.open({ definition: definition(failing.url), toolNames: ['crm'], projectId: 'p' });
    expect(await broken.describe()).toEqual([]);
    expect(await broken.call('lookup_customer', { id: 'c' })).toMatchObject({
      ok: false,
      error: expect.stringContaining('listing is down'),
    });
    await broken.close();
    // Opened by the initialize, ended although the toolbox never got a session to close.
    expect([failing.sessions.opened.length, failing.sessions.open()]).toEqual([1, 0]);
  });

  it('takes a 405 to the DELETE as a server without explicit termination', async () => {
    const mcp = await server({ onDelete: 405 });
    const toolbox = kit.open({ definition: definition(mcp.url), toolNames: ['crm'], projectId: 'p' });
    expect(await toolbox.call('lookup_customer', { id: 'c-1' })).toMatchObject({ ok: true });
    await expect(toolbox.close()).resolves.toBeUndefined();
    expect(mcp.sessions.deletes).toBe(1);
  });

  it("gives up a DELETE the server never answers after the tool's timeout, and the close returns", async () => {
    const mcp = await server({ onDelete: 'hang' });
    const toolbox = kit.open({ definition: definition(mcp.url, 200), toolNames: ['crm'], projectId: 'p' });
    expect(await toolbox.call('lookup_customer', { id: 'c-1' })).toMatchObject({ ok: true });
    await toolbox.close();
    expect(mcp.sessions.deletes).toBe(1);
    // The client dropped the pending DELETE rather than leaving it open behind the step.
    await mcp.deleteAborted();
  });
});

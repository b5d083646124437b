import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AddressRefusedError, pinnedFetch } from '#shared/network/pinned-fetch.ts';

/** Agents' tool calls connect only to the addresses checked for them: the lookup is done once and pinned. */
let server: Server;
let port: number;
const seen: { host: string | undefined; url: string | undefined }[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    seen.push({ host: request.headers.host, url: request.url });
    if (request.url === '/redirect') return void response.writeHead(302, { location: 'http://169.254.169.254/' }).end();
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, method: request.method }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe('pinned fetch', () => {
  it('connects to the one checked answer of the lookup, whatever the name would resolve to later', async () => {
    let lookups = 0;
    const fetch = pinnedFetch({
      allowLoopback: true,
      lookup: () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]).finally(() => (lookups += 1)),
    });
    const response = await fetch(`http://tools.invalid:${port}/x?q=1`, { method: 'POST', body: '{}' });
    expect(await response.json()).toEqual({ ok: true, method: 'POST' });
    expect(seen.at(-1)).toEqual({ host: `tools.invalid:${port}`, url: '/x?q=1' });
    expect(lookups).toBe(1);
  });

  it('refuses a name with any non-public answer, before connecting', async () => {
    const before = seen.length;
    const fetch = pinnedFetch({
      allowLoopback: false,
      lookup: () =>
        Promise.resolve([
          { address: '93.184.216.34', family: 4 },
          { address: '10.0.0.7', family: 4 },
        ]),
    });
    await expect(fetch(`http://tools.invalid:${port}/`)).rejects.toEqual(
      new AddressRefusedError('host resolves to the non-public address 10.0.0.7'),
    );
    await expect(
      pinnedFetch({ allowLoopback: false, lookup: () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]) })(
        `http://tools.invalid:${port}/`,
      ),
    ).rejects.toBeInstanceOf(AddressRefusedError);
    await expect(pinnedFetch({ allowLoopback: false })('http://169.254.169.254/latest/meta-data')).rejects.toThrow(
      /non-public address 169\.254\.169\.254/,
    );
    expect(seen.length).toBe(before);
  });

  it('answers a redirect as it is, never following it', async () => {
    const response = await pinnedFetch({ allowLoopback: true })(`http://127.0.0.1:${port}/redirect`);
    expect([response.status, response.headers.get('location')]).toEqual([302, 'http://169.254.169.254/']);
  });
});

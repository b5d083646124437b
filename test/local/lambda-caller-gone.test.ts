import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { clientResponse } from '../support/client-response.ts';
import { LocalLambda } from '#lib/twin/lambda/function-host.ts';
import { parseStreamCallerGone } from '#lib/twin/lambda-streaming.ts';

/**
 * Lambda does not tell a streaming function that its caller left: "streamed responses are not interrupted or stopped
 * when the invoking client connection is broken. Customers will be billed for the full function duration"
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-response-streaming.html). The twin's Lambda host behaves
 * so by default; `streamCallerGone` (TWIN_STREAM_CALLER_GONE=1) tells the function, which no deployment does.
 */
const hosts: LocalLambda[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((lambda) => lambda.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function untilTold(streamCallerGone?: boolean) {
  const lines: string[] = [];
  const lambda = new LocalLambda({
    functionName: 'stream-until-told',
    handlerFile: fileURLToPath(new URL('../fixtures/functions/stream-until-told.ts', import.meta.url)),
    environment: {},
    timeoutSeconds: 60,
    streaming: true,
    memoryMb: 256,
    streamCallerGone,
    onLogLine: (line) => lines.push(line),
  });
  hosts.push(lambda);
  const dir = mkdtempSync(join(tmpdir(), 'caller-gone-'));
  dirs.push(dir);
  return { lambda, lines, releaseFile: join(dir, 'release') };
}

/** The function's one log line: its stdout reaches the host on a stream of its own, maybe after its result. */
async function loggedLine(lines: string[]): Promise<unknown> {
  for (let waited = 0; lines.length === 0 && waited < 30_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
  return JSON.parse(lines[0]!) as unknown;
}

describe("a streaming function whose caller left, on the twin's Lambda host", () => {
  it('is not told by default: it runs on, its writes going nowhere, until it ends by itself', async () => {
    const { lambda, lines, releaseFile } = untilTold();
    const { received, hangUp, body, toClient } = clientResponse();
    const invoked = lambda.invokeStreaming({ releaseFile }, toClient);
    await received('open');

    hangUp();
    expect(toClient.destroyed).toBe(true);
    expect(lambda.inFlight).toBe(1);
    writeFileSync(releaseFile, '');
    await invoked;

    expect(await loggedLine(lines)).toEqual({ told: false });
    expect(body()).toBe('open\n');
    expect(lambda.inFlight).toBe(0);
  }, 60_000);

  it('is told, its response stream destroyed, only with streamCallerGone', async () => {
    const { lambda, lines, releaseFile } = untilTold(true);
    const { received, hangUp, toClient } = clientResponse();
    const invoked = lambda.invokeStreaming({ releaseFile }, toClient);
    await received('open');

    hangUp();
    await invoked;

    expect(await loggedLine(lines)).toEqual({ told: true });
  }, 60_000);

  it('reads TWIN_STREAM_CALLER_GONE as 1 or 0, unset meaning 0; anything else stops the start', () => {
    expect(parseStreamCallerGone(undefined)).toBe(false);
    expect(parseStreamCallerGone('')).toBe(false);
    expect(parseStreamCallerGone('0')).toBe(false);
    expect(parseStreamCallerGone(' 1 ')).toBe(true);
    expect(() => parseStreamCallerGone('yes')).toThrow(/^TWIN_STREAM_CALLER_GONE must be 1 .+ or 0 .+, got "yes"$/);
  });
});

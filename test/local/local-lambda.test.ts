import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { LAMBDA_SYNC_PAYLOAD_BYTES, LocalLambda } from '#lib/twin/lambda/function-host.ts';

/** The twin's Lambda host: Lambda's timeout, payload limit, memory size and failed initializations, with fixture functions. */
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/functions/${name}.ts`, import.meta.url));
const hosts: LocalLambda[] = [];
const host = (name: string, timeoutSeconds = 60, memoryMb = 256) => {
  const lambda = new LocalLambda({
    functionName: name,
    handlerFile: fixture(name),
    environment: {},
    timeoutSeconds,
    streaming: false,
    memoryMb,
  });
  hosts.push(lambda);
  return lambda;
};
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((lambda) => lambda.close()));
});

const failureOf = async (work: Promise<unknown>) => {
  try {
    await work;
  } catch (error) {
    return { name: (error as Error).name, message: (error as Error).message };
  }
  throw new Error('expected the invocation to fail');
};

describe('the local Lambda host', () => {
  it('answers within the timeout and fails an invocation that outlives it with Sandbox.Timedout', async () => {
    // Far on either side of the limit, so a loaded machine's delays (a cold start, a starved thread) decide nothing.
    expect(await host('sleeper', 60).invoke({ sleepMs: 10 })).toEqual({ statusCode: 200, body: 'slept' });
    const sleeper = host('sleeper', 1);
    expect(await failureOf(sleeper.invoke({ sleepMs: 60_000 }))).toEqual({
      name: 'Sandbox.Timedout',
      message: 'Task timed out after 1.00 seconds',
    });
  }, 120_000);

  it('refuses an event over the synchronous invocation limit before the function sees it', async () => {
    const sleeper = host('sleeper');
    const failure = await failureOf(sleeper.invoke({ padding: 'x'.repeat(LAMBDA_SYNC_PAYLOAD_BYTES) }));
    expect(failure.name).toBe('RequestEntityTooLargeException');
  });

  it('measures a proxy event body as the JSON it is sent in: escapes count', async () => {
    const sleeper = host('sleeper');
    // Half the limit in quotes, each escaped as two bytes.
    const quotes = (count: number) => ({ sleepMs: 0, body: '"'.repeat(count) });
    const fits = Math.floor((LAMBDA_SYNC_PAYLOAD_BYTES - Buffer.byteLength(JSON.stringify(quotes(0)))) / 2);
    expect(await sleeper.invoke(quotes(fits))).toEqual({ statusCode: 200, body: 'slept' });
    expect((await failureOf(sleeper.invoke(quotes(fits + 1)))).name).toBe('RequestEntityTooLargeException');
  }, 120_000);

  it("holds a function's heap where the Lambda runtime holds it for its memory size, not above", async () => {
    // What the Node.js runtime's bootstrap gives a 256 MB function: a tenth as new space (semi-spaces of half that).
    const lambdaHeap = execFileSync(
      process.execPath,
      ['--max-semi-space-size=12', '--max-old-space-size=231', '-p', 'require("v8").getHeapStatistics().heap_size_limit'],
      { encoding: 'utf8' },
    );
    expect(await host('heap-probe').invoke({})).toEqual({ heapSizeLimit: Number(lambdaHeap) });
  }, 120_000);

  it('holds a function to its memory size with its Buffers counted: past it, Runtime.OutOfMemory and a fresh environment next', async () => {
    // 128 MB: the heap may grow to 116 MB, and Buffers live outside it, so only counting them makes 160 MiB fail.
    const hog = host('buffer-hog', 20, 128);
    expect(await hog.invoke({ mb: 16 })).toEqual({ held: 16, invocations: 1 });
    expect(await hog.invoke({ mb: 16 })).toEqual({ held: 16, invocations: 2 });
    const killed = await failureOf(hog.invoke({ mb: 160 }));
    // What Lambda reports when the kernel kills the function's process at its memory size.
    expect(killed.name).toBe('Runtime.OutOfMemory');
    expect(killed.message).toMatch(/^RequestId: [0-9a-f-]{36} Error: Runtime exited with error: signal: killed$/);
    expect(hog.maxMemoryUsedMb).toBeGreaterThan(128);
    // The environment died with it: the next invocation is a cold start.
    expect(await hog.invoke({ mb: 16 })).toEqual({ held: 16, invocations: 1 });
  }, 120_000);

  it('counts the resident memory of the Node runtime itself, as a Lambda process has it besides the function', async () => {
    const hog = host('buffer-hog', 20, 128);
    await hog.invoke({ mb: 0 });
    // A bare Node process's own resident memory (about 37 MiB on Node 24) and the worker's heap, with nothing held.
    expect(hog.maxMemoryUsedMb).toBeGreaterThan(30);
    expect(hog.maxMemoryUsedMb).toBeLessThan(128);
  }, 120_000);

  it('fails every invocation of a function whose initialization fails, with the initialization error', async () => {
    const failing = host('failing-init');
    for (let attempt = 0; attempt < 2; attempt += 1) {
      expect(await failureOf(failing.invoke({}))).toEqual({
        name: 'Error',
        message: 'Missing required environment variable EXAMPLE_TABLE',
      });
    }
  }, 120_000);
});

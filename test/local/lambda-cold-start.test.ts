import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalLambda, type InvocationTrace } from '#lib/twin/lambda/function-host.ts';

/** The `cold` mark of the twin's request lines: which invocation started the function's environment. */
const hog = new LocalLambda({
  functionName: 'buffer-hog',
  handlerFile: fileURLToPath(new URL('../fixtures/functions/buffer-hog.ts', import.meta.url)),
  environment: {},
  timeoutSeconds: 20,
  streaming: false,
  memoryMb: 128,
});
afterAll(() => hog.close());

async function traced(mb: number): Promise<{ cold: boolean; result: unknown }> {
  const trace: InvocationTrace = { cold: false };
  const result = await hog.invoke({ mb }, undefined, trace).catch((error: Error) => error.name);
  return { cold: trace.cold, result };
}

describe('a function invocation', () => {
  it('is cold when it starts the environment: the first, and the first after the environment ran out of memory', async () => {
    expect(await traced(0)).toEqual({ cold: true, result: { held: 0, invocations: 1 } });
    expect(await traced(0)).toEqual({ cold: false, result: { held: 0, invocations: 2 } });
    // Past its 128 MB the environment is killed (function-memory.ts), as Lambda's is.
    expect(await traced(160)).toEqual({ cold: false, result: 'Runtime.OutOfMemory' });
    expect(await traced(0)).toEqual({ cold: true, result: { held: 0, invocations: 1 } });
  }, 120_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http } from '../support/http.ts';
import { createKey, publishFixtures } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * A blocking execute that lasts longer than the streaming idle limit. The twin here ends a streamed response
 * after 4 s without a byte (API Gateway: 5 minutes), and the execute route sends its whitespace (a single space: no
 * padding by default, and the default twin holds nothing) every 200 ms (on AWS: every 25 s), twenty times as often as
 * the limit, so a loaded machine's delays cannot cut it; a 6-second `wait` node outlives the idle limit.
 */
const IDLE_TIMEOUT_MS = 4_000;
const WAIT_SECONDS = 6;

let twin: TestTwin;
let key: string;
beforeAll(async () => {
  process.env.EXECUTE_HEARTBEAT_MS = '200';
  twin = await startTestTwin({ streamIdleTimeoutMs: IDLE_TIMEOUT_MS });
  await publishFixtures(twin);
  key = (await createKey(twin, 'full')).key;
});
afterAll(() => twin?.close());

const execute = (path: string, body: unknown) =>
  http(`${twin.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify(body) });

describe('a blocking execute longer than the streaming idle limit', () => {
  it('answers 200 with the completed record in a body any JSON client parses, through the stage URL', async () => {
    const response = await execute('/prod/api/v1/published/workflows/router/execute', {
      user_id: 'u',
      input: { kind: 'slow' },
      overrides: { pause: { seconds: WAIT_SECONDS } },
    });

    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    // Whitespace kept the response alive, a space at a time, then the document: one JSON value.
    expect(response.text).toMatch(/^ {5,}\{/);
    const document = JSON.parse(response.text);
    expect(document).toMatchObject({ status: 'completed', output: 'waited', workflow_id: 'router', total_steps: 3, error: null });
    expect(document).not.toHaveProperty('poll_url');
    expect(document.elapsed_time).toBeGreaterThanOrEqual(WAIT_SECONDS);

    const polled = await http(`${twin.url}/prod/api/v1/published/executions/${document.execution_id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(polled.status).toBe(200);
    expect(polled.body).toEqual(document);
  }, 120_000);

  it('still answers refusals before the execution starts with their own status and a plain JSON body', async () => {
    const missing = await execute('/prod/api/v1/published/workflows/no-such-workflow/execute', { user_id: 'u' });
    expect(missing.status).toBe(404);
    expect(missing.text.startsWith('{')).toBe(true);
    expect(missing.body).toEqual({ detail: expect.any(String) });

    const tooLarge = await execute('/prod/api/v1/published/workflows/echo/execute', {
      user_id: 'u',
      input: { message: 'x'.repeat(200 * 1024) },
    });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body).toEqual({ detail: expect.any(String) });
  });
});

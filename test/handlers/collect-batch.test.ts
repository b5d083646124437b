import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localContext } from '#lib/twin/api-gateway-event.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * CollectBatch through its real task stack. A sweep's execution keeps the state machine definition it started with,
 * so an input naming the sweep `run_id` must still be collected, and answered with the name it came with.
 */
describe('CollectBatch', () => {
  let twin: TestTwin;
  let handler: (input: unknown, context: ReturnType<typeof localContext>) => Promise<unknown>;
  let taskId: string;

  beforeAll(async () => {
    twin = await startTestTwin();
    taskId = (await twin.admin('tasks', 'create', '--link', (await boundLink(twin, 'calls')).linkId)).task_id as string;
    // The twin gives the hand-off file only to the functions it runs; this test runs the handler in its own process.
    process.env.HANDOFF_EVENTS_FILE = join(mkdtempSync(join(tmpdir(), 'collect-batch-')), 'handoffs.jsonl');
    handler = (await import('#collection/handlers/collect-batch.ts')).handler;
  });
  afterAll(() => twin?.close());

  it('collects a sweep named sweep_id and answers with it', async () => {
    expect(await handler({ task_id: taskId, sweep_id: 'manual-a' }, localContext('CollectBatch', 60_000))).toEqual({
      task_id: taskId,
      sweep_id: 'manual-a',
      done: true,
    });
  });

  it('collects a sweep named run_id and answers in kind', async () => {
    expect(await handler({ task_id: taskId, run_id: 'manual-b' }, localContext('CollectBatch', 60_000))).toEqual({
      task_id: taskId,
      run_id: 'manual-b',
      done: true,
    });
  });

  it('refuses an input naming no sweep', async () => {
    await expect(handler({ task_id: taskId }, localContext('CollectBatch', 60_000))).rejects.toThrow();
  });
});

import { randomUUID } from 'node:crypto';
import type { ExecutionRecord } from '#executions/execution-model.ts';

/** A queued execution's status record as a start writes it, with what a test cares about changed. */
export function executionRecord(change: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return {
    execution_id: randomUUID(),
    project_id: 'p',
    publication_id: 'pub',
    workflow_id: 'w',
    user_id: 'u',
    thread_id: 't',
    status: 'queued',
    output: null,
    error: null,
    total_steps: 0,
    created_at: new Date().toISOString(),
    finished_at: null,
    pending_approval: null,
    task_token: null,
    callback_url: null,
    webhook_secret: null,
    callback_state: 'none',
    ...change,
  };
}

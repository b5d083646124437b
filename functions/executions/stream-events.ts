import type { ExecutionRecord, ExecutionStatus, PendingApproval } from './execution-model.ts';
import { usageOf, type ExecutionUsage } from './execution-usage.ts';

/**
 * An execution's event log: everything `/stream` shows, in order, each with an id from a gap-free per-execution
 * sequence (1, 2, 3, ...). Written by the execution's own path (the API when it starts the execution, the step function,
 * the approval task, stop, the execution-ended reconciler) and read by the streaming handlers; the log is what
 * makes a stream resumable, so nothing is shown that is not in it.
 *
 * The log ends at its one final `complete` (completed, failed or cancelled): no writer appends after it.
 */
type StreamEventType = 'start' | 'token' | 'tool_call' | 'agent_handoff' | 'node_update' | 'image' | 'error' | 'complete';

export interface StreamEvent {
  type: StreamEventType;
  data: Record<string, unknown>;
}

export interface NumberedStreamEvent extends StreamEvent {
  id: number;
}

/** Statuses after which nothing more happens to an execution. */
export const FINAL_STATUSES: readonly ExecutionStatus[] = ['completed', 'failed', 'cancelled'];

export interface CompleteData {
  output: unknown;
  execution_id: string;
  status: ExecutionStatus;
  error?: string;
  pending_approval?: PendingApproval;
  usage: ExecutionUsage;
}

export function isComplete(event: StreamEvent): event is StreamEvent & { data: CompleteData } {
  return event.type === 'complete';
}

/** The `complete` that ends the log (as opposed to the `complete` of an execution pausing at an approval). */
export function isFinalComplete(event: StreamEvent): boolean {
  return isComplete(event) && FINAL_STATUSES.includes(event.data.status);
}

export function startEvent(ids: Pick<ExecutionRecord, 'execution_id' | 'thread_id' | 'workflow_id'>): StreamEvent {
  return { type: 'start', data: { execution_id: ids.execution_id, thread_id: ids.thread_id, workflow_id: ids.workflow_id } };
}

/**
 * The events that tell a stream how the execution stands: `complete` with the output (and `error` before it for a
 * failed run, so a client that only shows errors sees it), or with the pending approval for an interrupted run.
 * Built from the record the writer just wrote, so the log says exactly what a poll says.
 */
export function settledEvents(
  record: Pick<ExecutionRecord, 'execution_id' | 'status' | 'output' | 'error' | 'pending_approval' | 'usage'>,
): StreamEvent[] {
  const complete: CompleteData = {
    output: record.status === 'completed' ? (record.output ?? null) : null,
    execution_id: record.execution_id,
    status: record.status,
    usage: usageOf(record.usage),
  };
  if (record.status === 'failed') {
    const message = record.error ?? 'Execution failed';
    return [
      { type: 'error', data: { message } },
      { type: 'complete', data: { ...complete, error: message } },
    ];
  }
  if (record.status === 'interrupted' && record.pending_approval) complete.pending_approval = record.pending_approval;
  return [{ type: 'complete', data: { ...complete } }];
}

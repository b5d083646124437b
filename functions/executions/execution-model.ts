/** An execution's statuses, as the Published Workflow API names them (functions/published/README.md#the-contract-in-brief). */
import { SECOND_MS } from '#shared/time.ts';
import { usageOf, type ExecutionUsage } from './execution-usage.ts';
import type { CostUnits, ModelUsage } from '#shared/metering/cost-meter.ts';
import type { ApprovalDecision } from './step-state.ts';
export type ExecutionStatus = 'queued' | 'running' | 'completed' | 'failed' | 'interrupted' | 'cancelled';

export const FINISHED_STATUSES: readonly ExecutionStatus[] = ['completed', 'failed', 'cancelled'];
/**
 * What a blocking execute waits for: it answers with one of these
 * (functions/published/README.md#workflow-api-behaviour-beyond-the-brief).
 */
export const SETTLED_STATUSES: readonly ExecutionStatus[] = ['completed', 'failed', 'interrupted', 'cancelled'];
export const STOPPABLE_STATUSES: readonly ExecutionStatus[] = ['queued', 'running'];

export interface PendingApproval {
  approval_id: string;
  message: string;
  node_id: string;
}

/** The execution's fixed context: what the caller asked for. Stored once as the execution item (`run#<id>`), read by each step. */
export interface ExecutionContext {
  execution_id: string;
  project_id: string;
  publication_id: string;
  workflow_id: string;
  user_id: string;
  thread_id: string;
  input: Record<string, unknown>;
  overrides: Record<string, Record<string, unknown>>;
  /** When execute started the execution: `{{history}}` shows the thread as it stood then. Absent on runs from before. */
  created_at?: string;
}

/**
 * The stored execution (`execution#<id>`), the status record every poll reads: ids and results only, so it
 * stays a few KB (its input and overrides are in the execution item). The repository keeps `output`, `error` and
 * the approval `message` in S3 when they are large and answers them whole.
 */
export interface ExecutionRecord extends Omit<ExecutionContext, 'input' | 'overrides'> {
  status: ExecutionStatus;
  output: unknown;
  error: string | null;
  total_steps: number;
  created_at: string;
  finished_at: string | null;
  pending_approval: PendingApproval | null;
  /** Internal: the approval task's token while one is awaited. Never leaves the service. */
  task_token: string | null;
  /**
   * Internal: while a decision is being sent, when its claim on the approval passes (ms since the epoch); the status is
   * `running` and the approval and token stay until the execution's step has taken the decision up. Null or absent otherwise.
   */
  approval_lease_until?: number | null;
  /**
   * Internal: the decision last claimed for one of the execution's approvals, `delivered` once sent and `resumed` once
   * its step took it up (a repeated request is then answered as the first was; see approval-decision.ts). Absent on
   * records from before.
   */
  approval_decision?: RecordedDecision | null;
  /** Internal: a task token Step Functions answered TaskDoesNotExist for once; found dead again, the execution fails. */
  dead_task_token?: string | null;
  callback_url: string | null;
  /** Internal: the caller's signing secret, kept only to sign the callback. */
  webhook_secret: string | null;
  callback_state: 'none' | 'pending' | 'delivered' | 'abandoned';
  /** Written at each pause and at the end; absent on records from before it was counted. */
  usage?: ExecutionUsage;
  /**
   * Internal: the units the execution's steps spent, written when it finishes (the cost report's per-run figures), with
   * `models`: what each model did (by logical model id), which the report prices per model.
   */
  cost_units?: ExecutionCostUnits;
  /**
   * Internal: the execution's own step recorded its ending, so the execution's own execution delivers its callback (a stop, an
   * approval that could not be delivered and the reconciler start a callback execution instead).
   */
  ended_by_step?: boolean;
}

/**
 * What an execution's record keeps of the decision last sent for one of its approvals (`approval_decision`): the
 * approval, the decision and the request's fingerprint. The decision's claim writes it, marks it `delivered` once Step
 * Functions took it, and the execution's step marks it `resumed` when it takes the decision up, once the decision's
 * `node_update` (the lifecycle stream's `decision`) is in the log. A repeated request for a delivered decision is answered
 * as the first one was: a caller whose answer was lost can retry and learn that its decision applied.
 */
export interface RecordedDecision {
  approval_id: string;
  decision: ApprovalDecision['decision'];
  fingerprint: string;
  delivered?: boolean;
  resumed?: boolean;
}

/** A finished execution's units, and its models' tokens and images (absent on executions that used no model, or from before). */
export type ExecutionCostUnits = Partial<CostUnits> & { models?: ModelUsage };

/** The status record (GET /executions/{id}): the execution result plus workflow_id and pending_approval. */
export function executionView(record: ExecutionRecord, nowMs: number) {
  const finishedMs = record.finished_at ? Date.parse(record.finished_at) : nowMs;
  return {
    execution_id: record.execution_id,
    thread_id: record.thread_id,
    workflow_id: record.workflow_id,
    status: record.status,
    output: record.output ?? null,
    error: record.status === 'failed' ? (record.error ?? 'Execution failed') : null,
    elapsed_time: Math.max(0, finishedMs - Date.parse(record.created_at)) / SECOND_MS,
    total_steps: record.total_steps,
    created_at: record.created_at,
    finished_at: record.finished_at,
    pending_approval: record.status === 'interrupted' ? record.pending_approval : null,
    usage: usageOf(record.usage),
  };
}

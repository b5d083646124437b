import { MAX_EXECUTION_RESULT_BYTES } from '#shared/limits.ts';
import { emptyModelUsage, type ModelUsage } from '#shared/metering/cost-meter.ts';
import type { NodeOfType, WorkflowNode } from '#workflows/definition-schema.ts';
import type { TemplateScope } from '#workflows/template.ts';
import { usageOf, type ExecutionUsage } from '#executions/execution-usage.ts';
import type { Cursor, StepState } from '#executions/step-state.ts';
import { ExecutionFailure } from '../execution-failure.ts';
import type { StepDeps, StepInvocation } from '../step-invocation.ts';

/** What the state machine is told when a step stops: the Choice states read these. */
export type Paused = Pick<StepState, 'outcome' | 'wait_seconds' | 'approval' | 'callback'>;

/** One node as its executor sees it, in the step that reached it. */
interface NodeContext<T extends WorkflowNode['type']> {
  deps: StepDeps;
  step: StepInvocation;
  nodeId: string;
  node: NodeOfType<T>;
  scope: TemplateScope;
  /** Keeps the node's output (the next nodes' `{{nodes.<id>.output}}`) and announces the node completed. */
  setOutput: (output: unknown, detail?: Record<string, unknown>) => void;
  /** Adds a turn to the execution's thread. */
  appendTurn: (role: 'user' | 'assistant', text: string) => Promise<void>;
}

/** How an execution ends: the step records it. */
interface ExecutionEnd {
  status: 'completed' | 'failed';
  output?: unknown;
  error?: string;
}

/**
 * What a node asks of the step: nothing (it moved `cursor.node`, and the step goes on), a pause (a `wait`, or an
 * `approval` with its message), or the end of the execution.
 */
export type NodeOutcome = undefined | { pause: Paused & { message?: string } } | { end: ExecutionEnd };

export type NodeExecutor<T extends WorkflowNode['type']> = (context: NodeContext<T>) => Promise<NodeOutcome>;

/** The execution's counters, carried by the cursor between steps. */
export function usageIn(cursor: Cursor): ExecutionUsage {
  return (cursor.usage ??= usageOf(undefined));
}

/** The execution's counters per model, carried by the cursor beside `usage` (absent until a model is used). */
export function modelsIn(cursor: Cursor): ModelUsage {
  return (cursor.models ??= emptyModelUsage());
}

/** An output or approval message must fit the API's answers (MAX_EXECUTION_RESULT_BYTES); a larger one fails the execution, saying so. */
export function assertResultSize(what: string, value: unknown): void {
  const bytes = Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');
  if (bytes > MAX_EXECUTION_RESULT_BYTES) {
    throw new ExecutionFailure(
      `${what} is ${bytes} bytes of JSON; an execution's output or approval message is at most ${MAX_EXECUTION_RESULT_BYTES} bytes`,
    );
  }
}

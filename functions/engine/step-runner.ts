import { HISTORY_RETENTION_MS, MAX_HISTORY_TURNS, MAX_STEPS_PER_EXECUTION } from '#shared/limits.ts';
import type { WorkflowDefinition, WorkflowNode } from '#workflows/definition-schema.ts';
import { applyOverrides } from '#workflows/overrides.ts';
import { scopeNeeds } from '#workflows/scope-needs.ts';
import type { TemplateScope } from '#workflows/template.ts';
import type { Turn } from '#executions/user-state-repository.ts';
import { takeUpDecision } from '#executions/approval-decision.ts';
import { usageOf, type ExecutionUsage } from '#executions/execution-usage.ts';
import {
  addCostUnits,
  addModelUsage,
  hasModelUsage,
  meteredSoFar,
  meterSubject,
  recordCost,
  recordModelUsage,
  subtractModelUsage,
  type CostUnits,
  type ModelUsage,
} from '#shared/metering/cost-meter.ts';
import type { ExecutionCostUnits } from '#executions/execution-model.ts';
import { ExecutionFailure } from './execution-failure.ts';
import type { NodeOutputs } from '#executions/context-store.ts';
import type { ApprovalDecision, Cursor, StepState } from '#executions/step-state.ts';
import {
  endLogAsRecorded,
  streamEventAppender,
  streamEventBuffer,
  type StreamEventAppender,
  type StreamEventBuffer,
} from '#executions/stream-event-log.ts';
import { settledEvents } from '#executions/stream-events.ts';
import { logger } from '#shared/lambda/powertools.ts';
import type { StepDeps, StepInvocation } from './step-invocation.ts';
import { executorOf } from './nodes/executors.ts';
import type { NodeOutcome, Paused } from './nodes/node-context.ts';

export type { StepDeps } from './step-invocation.ts';

/** What `finish` needs: the record, and where the events of the ending go. */
interface Ending {
  appender: StreamEventAppender;
  events: StreamEventBuffer;
  /** The cursor the step was given: what the execution had spent before this invocation. */
  entry: Cursor;
  /** The cursor the nodes count into, once the step has one (a copy of `entry`). */
  cursor?: Cursor;
  /** The execution's model and tool counters as far as this invocation's meter has them (`meterModelUse`). */
  metered: { usage: ExecutionUsage; models: ModelUsage };
  /** The replies this invocation added to the thread: taken back if the execution turns out to have ended meanwhile. */
  replies: { projectId: string; userId: string; threadId: string; turn: Turn; sequence: number }[];
}

/**
 * One step of an execution, as the state machine's RunStep task: runs nodes until the execution ends, reaches a `wait`
 * or an `approval`, and tells the state machine which. All nodes between two pauses run in one Lambda
 * invocation, so an execution costs the same few state transitions however many nodes it has.
 *
 * The state machine state is ids and this cursor only (Step Functions allows 256 KiB): the step reads the
 * execution context (one GetItem) and, after a pause, the node outputs so far (one GetItem); node outputs are
 * written once per pause, only when a node ran since the last one.
 */
export async function runStep(deps: StepDeps, state: StepState): Promise<StepState> {
  // Before the first step the log holds the one `start` event execute wrote (unless a stop came first).
  const expectedTail = isFirstStep(state) ? { lastId: 1, final: false } : undefined;
  const appender = streamEventAppender(deps.events, state.execution_id, { now: deps.now, expectedTail });
  const events = streamEventBuffer(appender, { now: deps.now });
  const metered = { usage: usageOf(state.cursor.usage), models: addModelUsage(undefined, state.cursor.models) };
  const ending: Ending = { appender, events, entry: state.cursor, metered, replies: [] };
  try {
    const next = await runStepWithEvents(deps, state, ending);
    await events.flush();
    return next;
  } catch (error) {
    // The step fails and is retried; events already buffered still go out, so a stream shows what happened.
    await events.flush().catch(() => undefined);
    throw error;
  } finally {
    // Whatever way the attempt ended: model calls it made after its last settlement (all of them, when it failed) are
    // billed by Bedrock all the same, and the retry starts again from the entry cursor and meters its own.
    if (ending.cursor) meterModelUse(ending, ending.cursor);
  }
}

/** The execution's first step: nothing counted yet, and not a resumption after an approval. */
function isFirstStep(state: StepState): boolean {
  return state.cursor.steps === 0 && !state.decision;
}

async function runStepWithEvents(deps: StepDeps, state: StepState, ending: Ending): Promise<StepState> {
  const executionId = state.execution_id;
  const base = { execution_id: executionId, cursor: state.cursor };
  if (state.failure)
    return { ...base, ...(await finish(deps, ending, executionId, 'failed', { error: describeFailure(state.failure) }, state.cursor)) };

  const firstStep = isFirstStep(state);
  // One round trip before the first node: the context, the outputs so far (after a pause) and, on the first step, the
  // running mark are independent (one GetItem or UpdateItem each; S3 only for large values). After an approval the
  // decision is taken up beside them (its event, then the record).
  const [{ expires_at: expiresAt, ...execution }, outputs, started] = await Promise.all([
    deps.contexts.readContext(executionId),
    deps.contexts.readOutputs(executionId, state.cursor.outputs),
    firstStep
      ? deps.executions.transition(executionId, ['queued', 'running'], { status: 'running' })
      : state.decision
        ? resumeWith(deps, ending, executionId, state.cursor.node, state.decision)
        : true,
  ]);
  meterSubject({ project: execution.project_id });
  // An execution stopped before its first step goes no further; its message stays in its thread's history (it was sent).
  // So does a retry of a first step that ended the execution already, and a resumed one whose log has ended.
  if (!started) return { ...base, ...(await alreadyEnded(deps, ending, executionId)) };
  const published = await deps.publications.getWorkflow(execution.publication_id, execution.workflow_id);
  if (!published) {
    return {
      ...base,
      ...(await finish(deps, ending, executionId, 'failed', { error: 'The workflow is no longer published' }, state.cursor)),
    };
  }

  // Copies: the counters grow in place, and the entry cursor must keep what the execution had spent before this step.
  const cursor: Cursor & { usage: ExecutionUsage } = {
    ...state.cursor,
    usage: usageOf(state.cursor.usage),
    ...(state.cursor.models ? { models: addModelUsage(undefined, state.cursor.models) } : {}),
  };
  ending.cursor = cursor;
  const step: StepInvocation = {
    execution,
    expiresAt,
    cursor,
    nodes: Object.assign(Object.create(null) as NodeOutputs, outputs),
    changed: false,
    events: ending.events,
  };
  const appendTurn = async (role: 'user' | 'assistant', text: string) => {
    const now = deps.now();
    cursor.turns += 1;
    const turn: Turn = { role, text, execution_id: executionId, at: new Date(now).toISOString() };
    await deps.userState.appendTurn(
      execution.project_id,
      execution.user_id,
      execution.thread_id,
      turn,
      cursor.turns,
      now + HISTORY_RETENTION_MS,
    );
    if (role === 'assistant')
      ending.replies.push({
        projectId: execution.project_id,
        userId: execution.user_id,
        threadId: execution.thread_id,
        turn,
        sequence: cursor.turns,
      });
  };

  try {
    const definition = applyOverrides(published.definition, execution.overrides);
    step.definition = definition;
    // Execute wrote the user's message (turns 1); an execution started before it did so has its message written here.
    const [scope] = await Promise.all([
      loadScope(deps, step, definition),
      firstStep && cursor.turns === 0 && typeof execution.input.message === 'string'
        ? appendTurn('user', execution.input.message)
        : undefined,
    ]);
    if (state.decision) {
      const next = resumeAfterApproval(definition, step, state.decision);
      scope.approval = approvalOf(step);
      if (next === undefined) {
        return {
          ...base,
          cursor,
          ...(await finish(deps, ending, executionId, 'failed', { error: state.decision.feedback || 'Rejected' }, cursor)),
        };
      }
      cursor.node = next;
    }

    for (;;) {
      if (cursor.steps >= MAX_STEPS_PER_EXECUTION) throw new ExecutionFailure(`The execution exceeded ${MAX_STEPS_PER_EXECUTION} steps`);
      const nodeId = cursor.node;
      const node = Object.hasOwn(definition.nodes, nodeId) ? definition.nodes[nodeId] : undefined;
      if (!node) throw new ExecutionFailure(`Node ${nodeId} does not exist`);
      cursor.steps += 1;
      step.events.push({ type: 'node_update', data: { node_id: nodeId, type: node.type, status: 'started' } });
      const outcome = await executeNode(deps, step, nodeId, node, scope, appendTurn);
      if (!outcome) continue;
      // A `fail` or `end` node settles the step in finish, also when the execution was stopped meanwhile: never twice.
      if ('end' in outcome)
        return { ...base, cursor, ...(await finish(deps, ending, executionId, outcome.end.status, outcome.end, cursor)) };
      return { ...base, cursor, ...(await pause(deps, ending, step, outcome.pause)) };
    }
  } catch (error) {
    if (!(error instanceof ExecutionFailure) && !isWorkflowDataError(error)) throw error;
    return { ...base, cursor, ...(await finish(deps, ending, executionId, 'failed', { error: (error as Error).message }, cursor)) };
  }
}

/**
 * Before the state machine waits: the node outputs so far are stored (they are the next step's scope), then
 * the status record learns the step count and, for an approval, the pending approval with its message
 * (AwaitApproval then adds the task token and makes the execution `interrupted`). An execution stopped meanwhile ends here.
 */
async function pause(deps: StepDeps, ending: Ending, step: StepInvocation, paused: Paused & { message?: string }): Promise<Paused> {
  const { cursor, execution } = step;
  cursor.cost = settleStepUnits(ending, cursor, false);
  if (step.changed) {
    await deps.contexts.writeOutputs(execution.execution_id, cursor.outputs + 1, step.nodes, step.expiresAt);
    cursor.outputs += 1;
  }
  const pending = paused.approval ? { ...paused.approval, message: paused.message ?? '' } : undefined;
  const stillRunning = await deps.executions.transition(execution.execution_id, ['running'], {
    total_steps: cursor.steps,
    pending_approval: pending,
    usage: cursor.usage,
  });
  if (!stillRunning) return alreadyEnded(deps, ending, execution.execution_id);
  const { message: _message, ...small } = paused;
  return small;
}

/** Runs one node through its type's executor (nodes/). */
function executeNode(
  deps: StepDeps,
  step: StepInvocation,
  nodeId: string,
  node: WorkflowNode,
  scope: TemplateScope,
  appendTurn: (role: 'user' | 'assistant', text: string) => Promise<void>,
): Promise<NodeOutcome> {
  const setOutput = (output: unknown, detail: Record<string, unknown> = {}) => {
    step.nodes[nodeId] = { output };
    step.changed = true;
    step.events.push({ type: 'node_update', data: { node_id: nodeId, type: node.type, status: 'completed', ...detail } });
  };
  return executorOf(node.type)({ deps, step, nodeId, node, scope, setOutput, appendTurn });
}

/**
 * What this step invocation adds to the bill and to the execution's cost: its state transitions (RunStep and Route; Dispatch
 * before the first step, the Pause or AwaitApproval it resumes from, Done when the execution ends), the model and tool use
 * it caused, and a finished run. Called once per invocation, where it pauses or finishes; answers the execution's units so far.
 */
function settleStepUnits(ending: Ending, cursor: Cursor, finished: boolean): Partial<CostUnits> {
  meterModelUse(ending, cursor);
  recordCost({ stateTransitions: 2 + 1 + (finished ? 1 : 0), runsFinished: finished ? 1 : 0 });
  return addCostUnits(ending.entry.cost, meteredSoFar());
}

/**
 * Meters the model and tool use the execution's counters gained since this invocation last metered them (at first: since
 * the entry cursor), and moves the mark: called where the step settles (pause, finish) and once more as the attempt
 * ends, however it ends, so each call is metered exactly once. The aggregate counts stay (the execution's `usage`);
 * the dollars come from the per-model counters.
 */
function meterModelUse(ending: Ending, cursor: Cursor): void {
  const before = ending.metered.usage;
  const after = usageOf(cursor.usage);
  recordModelUsage(subtractModelUsage(cursor.models, ending.metered.models));
  recordCost({
    modelCalls: after.model_calls - before.model_calls,
    inputTokens: after.input_tokens - before.input_tokens,
    outputTokens: after.output_tokens - before.output_tokens,
    toolCalls: after.tool_calls - before.tool_calls,
    images: after.images - before.images,
  });
  ending.metered = { usage: after, models: addModelUsage(undefined, cursor.models) };
}

/** What a finished execution's record keeps: its units, and its models' counters when it used any. */
function executionCostUnits(units: Partial<CostUnits>, models: ModelUsage | undefined): ExecutionCostUnits {
  return hasModelUsage(models) ? { ...units, models } : units;
}

/** Memory and history are read only when the workflow can see them: each read is a billed query per step. */
async function loadScope(deps: StepDeps, step: StepInvocation, definition: WorkflowDefinition): Promise<TemplateScope> {
  const { execution } = step;
  const needs = scopeNeeds(definition);
  const [memory, history] = await Promise.all([
    needs.memory ? deps.userState.readMemory(execution.project_id, execution.user_id) : (Object.create(null) as Record<string, unknown>),
    needs.history
      ? deps.userState.readHistory(execution.project_id, execution.user_id, execution.thread_id, MAX_HISTORY_TURNS, {
          executionId: execution.execution_id,
          startedAt: execution.created_at,
        })
      : [],
  ]);
  return {
    input: execution.input,
    memory,
    nodes: step.nodes,
    approval: approvalOf(step),
    history: history.map((turn) => `${turn.role}: ${turn.text}`).join('\n'),
  };
}

/** `{{approval.*}}`: the decision of the approval the execution last resumed from, kept as that node's output. */
function approvalOf(step: StepInvocation): TemplateScope['approval'] {
  const node = step.cursor.approval_node;
  if (node === null || !Object.hasOwn(step.nodes, node)) return null;
  return step.nodes[node]!.output as TemplateScope['approval'];
}

function resumeAfterApproval(definition: WorkflowDefinition, step: StepInvocation, decision: ApprovalDecision): string | undefined {
  const { cursor } = step;
  const node = Object.hasOwn(definition.nodes, cursor.node) ? definition.nodes[cursor.node] : undefined;
  if (node?.type !== 'approval') throw new ExecutionFailure(`Node ${cursor.node} is not an approval`);
  step.nodes[cursor.node] = { output: { decision: decision.decision, feedback: decision.feedback } };
  step.changed = true;
  cursor.approval_node = cursor.node;
  const edges = typeof node.next === 'string' ? { approved: node.next, rejected: undefined } : node.next;
  return decision.decision === 'approved' ? edges.approved : edges.rejected;
}

/**
 * The decision the execution resumes with, taken up before its first node: its event goes to the log at once (not with
 * the step's next batch), then the record lets go of the approval and of the decision's claim, which until then answers
 * a stop 409 (executions/approval-decision.ts). So the log shows the decision before any stop's cancellation: a
 * decision answered 200 applied. False when the log has ended: the execution was stopped (after the claim's lease) first.
 */
async function resumeWith(deps: StepDeps, ending: Ending, executionId: string, nodeId: string, decision: ApprovalDecision) {
  ending.events.push({
    type: 'node_update',
    data: { node_id: nodeId, type: 'approval', status: decision.decision, approval_id: decision.approval_id, feedback: decision.feedback },
  });
  if ((await ending.events.flush()) === 'closed') return false;
  await takeUpDecision(deps.executions, executionId, decision);
  return true;
}

/** The repository keeps a large output or error in S3 (and cuts an error past MAX_EXECUTION_RESULT_BYTES). */
async function finish(
  deps: StepDeps,
  ending: Ending,
  executionId: string,
  status: 'completed' | 'failed',
  result: { output?: unknown; error?: string },
  cursor: Cursor,
): Promise<Paused> {
  const cost_units = executionCostUnits(settleStepUnits(ending, cursor, true), cursor.models);
  const changes = {
    cost_units,
    ended_by_step: true,
    status,
    output: result.output ?? null,
    error: result.error ?? null,
    finished_at: new Date(deps.now()).toISOString(),
    total_steps: cursor.steps,
    pending_approval: null,
    task_token: null,
    usage: usageOf(cursor.usage),
  };
  const previous = await deps.executions.transition(executionId, ['queued', 'running', 'interrupted'], changes);
  if (!previous) return alreadyEnded(deps, ending, executionId);
  for (const event of settledEvents({ execution_id: executionId, ...changes })) ending.events.push(event);
  // callback_state has been `pending` since the execution was created with a callback_url.
  return { outcome: 'finished', callback: Boolean(previous.callback_url) };
}

/**
 * The execution had ended: another path ended it (a stop, an approval that could not be delivered), or this is a retry of
 * a step that ended it and then failed (its events unwritten, say). The log ends as the record says, whoever wrote
 * it, and a callback the execution's own step left pending is still this execution's to deliver; the other paths start a
 * callback execution of their own. Replies this invocation added are not the execution's (a stopped run's model went on
 * answering; a retry repeats the replies of its first attempt): they leave the thread again.
 */
async function alreadyEnded(deps: StepDeps, ending: Ending, executionId: string): Promise<Paused> {
  const record = await deps.executions.get(executionId, true);
  await ending.events.flush();
  if (record) await endLogAsRecorded(ending.appender, record);
  await Promise.all(
    ending.replies.splice(0).map(({ projectId, userId, threadId, turn, sequence }) =>
      deps.userState.removeTurn(projectId, userId, threadId, turn, sequence).catch((error: unknown) => {
        logger.warn('could not take back the reply of an execution that had ended', { executionId, error: error as Error });
      }),
    ),
  );
  // A stop's StopExecution follows its record write: the state machine waits for it (AwaitStop), so the execution ends
  // ABORTED as the record says, never SUCCEEDED.
  if (record?.status === 'cancelled') return { outcome: 'stopped' };
  return { outcome: 'finished', callback: record?.ended_by_step === true && record.callback_state === 'pending' };
}

/** JSONata raises errors with a `code` (e.g. T2001); they are the workflow's, not the platform's. */
function isWorkflowDataError(error: unknown): boolean {
  return typeof (error as { code?: unknown })?.code === 'string' && /^[A-Z]\d{4}$/.test((error as { code: string }).code);
}

/** The state machine's Catch gives `{Error, Cause}`; on AWS a Lambda's Cause is its JSON error report. */
export function describeFailure(failure: { Error?: string; Cause?: string }): string {
  if (failure.Error === 'States.Timeout') return 'The approval was not answered in time';
  let message = failure.Cause ?? '';
  try {
    const report = JSON.parse(message) as { errorMessage?: string };
    if (typeof report.errorMessage === 'string') message = report.errorMessage;
  } catch {
    // Cause is plain text already
  }
  return `Execution error (${failure.Error ?? 'unknown'}): ${message || 'no details'}`;
}

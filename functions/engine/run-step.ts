import { HISTORY_RETENTION_MS, MAX_HISTORY_TURNS, MAX_STEPS_PER_RUN } from '../shared/limits.ts';
import { newId } from '../shared/secrets.ts';
import { conditionHolds } from '../workflows/condition.ts';
import type { WorkflowDefinition, WorkflowNode } from '../workflows/definition-schema.ts';
import { applyOverrides } from '../workflows/overrides.ts';
import { scopeNeeds } from '../workflows/scope-needs.ts';
import type { PublicationsRepository } from '../workflows/publications-repository.ts';
import { renderText, renderValue, type TemplateScope } from '../workflows/template.ts';
import type { ConversationsRepository } from './conversations-repository.ts';
import type { ExecutionsRepository } from './executions-repository.ts';
import type { PendingApproval, RunContext } from './execution-model.ts';
import type { LlmProvider } from './llm-provider.ts';

/**
 * One step of a run, as the state machine's RunStep task: runs nodes until the run ends, reaches a `wait`
 * or an `approval`, and tells the state machine which. All nodes between two pauses run in one Lambda
 * invocation, so a run costs the same few state transitions however many nodes it has.
 */
export interface StepDeps {
  executions: ExecutionsRepository;
  conversations: ConversationsRepository;
  publications: PublicationsRepository;
  providers: Record<'scripted' | 'bedrock', LlmProvider>;
  now: () => number;
}

export interface Cursor {
  node: string;
  nodes: Record<string, { output: unknown }>;
  approval: { decision: 'approved' | 'rejected'; feedback: string } | null;
  steps: number;
  /** Orders this run's history turns. */
  turns: number;
}

/** What AwaitApproval's task token answers with (SendTaskSuccess output). */
export interface ApprovalDecision {
  decision: 'approved' | 'rejected';
  feedback: string;
  approval_id: string;
}

/** The state machine's state: the step's input and output. */
export interface StepState {
  execution_id: string;
  run: RunContext;
  cursor: Cursor;
  decision?: ApprovalDecision;
  /** Set by the state machine's Catch: an error the step itself could not record. */
  failure?: { Error?: string; Cause?: string };
  outcome?: 'wait' | 'approval' | 'finished';
  wait_seconds?: number;
  approval?: PendingApproval;
  /** Whether a callback must be delivered now that the run finished. */
  callback?: boolean;
}

export function initialCursor(definition: WorkflowDefinition): Cursor {
  return { node: definition.start, nodes: {}, approval: null, steps: 0, turns: 0 };
}

/** An error in the workflow itself (its definition or data), recorded as the run's `error` rather than retried. */
class RunFailure extends Error {}

export async function runStep(deps: StepDeps, state: StepState): Promise<StepState> {
  const { run } = state;
  const base = { execution_id: state.execution_id, run, cursor: state.cursor };
  if (state.failure) return { ...base, ...(await finish(deps, run.execution_id, 'failed', { error: describeFailure(state.failure) }, state.cursor)) };

  const published = await deps.publications.getWorkflow(run.publication_id, run.workflow_id);
  if (!published) {
    return { ...base, ...(await finish(deps, run.execution_id, 'failed', { error: 'The workflow is no longer published' }, state.cursor)) };
  }

  const isFirstStep = state.cursor.steps === 0 && !state.decision;
  if (isFirstStep) {
    const started = await deps.executions.transition(run.execution_id, ['queued', 'running'], { status: 'running' });
    if (!started) return { ...base, outcome: 'finished', callback: false };
  }

  const cursor: Cursor = structuredClone(state.cursor);
  const appendTurn = (role: 'user' | 'assistant', text: string) => {
    const now = deps.now();
    cursor.turns += 1;
    return deps.conversations.appendTurn(
      run.project_id,
      run.user_id,
      run.thread_id,
      { role, text, execution_id: run.execution_id, at: new Date(now).toISOString() },
      cursor.turns,
      now + HISTORY_RETENTION_MS,
    );
  };

  try {
    const definition = applyOverrides(published.definition, run.overrides);
    const scope = await loadScope(deps, run, cursor, definition);
    if (isFirstStep && typeof run.input.message === 'string') await appendTurn('user', run.input.message);
    if (state.decision) {
      const next = resumeAfterApproval(definition, cursor, state.decision);
      scope.approval = cursor.approval;
      if (next === undefined) {
        return { ...base, cursor, ...(await finish(deps, run.execution_id, 'failed', { error: state.decision.feedback || 'Rejected' }, cursor)) };
      }
      cursor.node = next;
    }

    for (;;) {
      if (cursor.steps >= MAX_STEPS_PER_RUN) throw new RunFailure(`The run exceeded ${MAX_STEPS_PER_RUN} steps`);
      const nodeId = cursor.node;
      const node = definition.nodes[nodeId];
      if (!node) throw new RunFailure(`Node ${nodeId} does not exist`);
      cursor.steps += 1;
      const paused = await executeNode(deps, run, nodeId, node, scope, cursor, appendTurn);
      if (paused) {
        if (paused.outcome === 'finished') return { ...base, cursor, ...paused };
        const stillRunning = await deps.executions.transition(run.execution_id, ['running'], { total_steps: cursor.steps });
        if (!stillRunning) return { ...base, cursor, outcome: 'finished', callback: false };
        return { ...base, cursor, ...paused };
      }
    }
  } catch (error) {
    if (!(error instanceof RunFailure) && !isWorkflowDataError(error)) throw error;
    return { ...base, cursor, ...(await finish(deps, run.execution_id, 'failed', { error: (error as Error).message }, cursor)) };
  }
}

type Paused = Pick<StepState, 'outcome' | 'wait_seconds' | 'approval' | 'callback'>;

async function executeNode(
  deps: StepDeps,
  run: RunContext,
  nodeId: string,
  node: WorkflowNode,
  scope: TemplateScope,
  cursor: Cursor,
  appendTurn: (role: 'user' | 'assistant', text: string) => Promise<void>,
): Promise<Paused | undefined> {
  switch (node.type) {
    case 'llm': {
      const reply = await deps.providers[node.provider].generate({ node, scope, onToken: () => undefined });
      cursor.nodes[nodeId] = { output: reply };
      await appendTurn('assistant', reply);
      cursor.node = node.next;
      return undefined;
    }
    case 'memory': {
      const values = Object.fromEntries(Object.entries(node.set).map(([name, template]) => [name, renderValue(template, scope)]));
      await deps.conversations.writeMemory(run.project_id, run.user_id, values);
      Object.assign(scope.memory, values);
      cursor.nodes[nodeId] = { output: values };
      cursor.node = node.next;
      return undefined;
    }
    case 'condition': {
      let next = node.else;
      for (const branch of node.cases) {
        if (await conditionHolds(branch.if, scope)) {
          next = branch.next;
          break;
        }
      }
      cursor.nodes[nodeId] = { output: next };
      cursor.node = next;
      return undefined;
    }
    case 'wait':
      cursor.node = node.next;
      return { outcome: 'wait', wait_seconds: node.seconds };
    case 'approval':
      // The cursor stays on the approval node; the decision picks the edge when the run resumes.
      return {
        outcome: 'approval',
        approval: { approval_id: newId('apr_'), message: renderText(node.message, scope), node_id: nodeId },
      };
    case 'fail':
      return finish(deps, run.execution_id, 'failed', { error: renderText(node.error, scope) }, cursor);
    case 'end':
      return finish(deps, run.execution_id, 'completed', { output: renderValue(node.output, scope) }, cursor);
  }
}

/** Memory and history are read only when the workflow can see them: each read is a billed query per step. */
async function loadScope(deps: StepDeps, run: RunContext, cursor: Cursor, definition: WorkflowDefinition): Promise<TemplateScope> {
  const needs = scopeNeeds(definition);
  const [memory, history] = await Promise.all([
    needs.memory ? deps.conversations.readMemory(run.project_id, run.user_id) : {},
    needs.history ? deps.conversations.readHistory(run.project_id, run.user_id, run.thread_id, MAX_HISTORY_TURNS * 2) : [],
  ]);
  return {
    input: run.input,
    memory,
    nodes: cursor.nodes,
    approval: cursor.approval,
    history: history
      .filter((turn) => turn.execution_id !== run.execution_id)
      .slice(-MAX_HISTORY_TURNS)
      .map((turn) => `${turn.role}: ${turn.text}`)
      .join('\n'),
  };
}

function resumeAfterApproval(definition: WorkflowDefinition, cursor: Cursor, decision: ApprovalDecision): string | undefined {
  const node = definition.nodes[cursor.node];
  if (node?.type !== 'approval') throw new RunFailure(`Node ${cursor.node} is not an approval`);
  cursor.approval = { decision: decision.decision, feedback: decision.feedback };
  cursor.nodes[cursor.node] = { output: { decision: decision.decision, feedback: decision.feedback } };
  const edges = typeof node.next === 'string' ? { approved: node.next, rejected: undefined } : node.next;
  return decision.decision === 'approved' ? edges.approved : edges.rejected;
}

async function finish(
  deps: StepDeps,
  executionId: string,
  status: 'completed' | 'failed',
  result: { output?: unknown; error?: string },
  cursor: Cursor,
): Promise<Paused> {
  const previous = await deps.executions.transition(executionId, ['queued', 'running', 'interrupted'], {
    status,
    output: result.output ?? null,
    error: result.error ?? null,
    finished_at: new Date(deps.now()).toISOString(),
    total_steps: cursor.steps,
    pending_approval: null,
    task_token: null,
  });
  // callback_state has been `pending` since the run was created with a callback_url.
  return { outcome: 'finished', callback: Boolean(previous?.callback_url) };
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

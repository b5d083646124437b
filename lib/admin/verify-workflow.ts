import { setTimeout as sleep } from 'node:timers/promises';
import { routePath } from '#functions/routes.ts';
import { parseDefinition } from '#workflows/definition-validation.ts';
import { createPublicationsRepository } from '#workflows/publications-repository.ts';
import { publish, unpublish } from '#workflows/publication-service.ts';
import { CheckFailure, type CheckOutcome, type VerifyCheck, type VerifyContext } from './verify-check.ts';
import {
  answered,
  apiRequest,
  field,
  openRequest,
  readEventStream,
  UNINTERRUPTED,
  unreachable,
  type ApiAnswer,
  type StreamedEvent,
} from './verify-http.ts';

/** The workflow the check publishes: one node, an approval, one node; scripted, so no model is called. */
const VERIFY_WORKFLOW_ID = 'admin-verify';
const VERIFY_WORKFLOW = {
  id: VERIFY_WORKFLOW_ID,
  name: 'admin verify',
  description: 'Published by `admin verify` in a project of its own, and unpublished again',
  start: 'first',
  nodes: {
    first: { type: 'llm', provider: 'scripted', reply: 'checking {{input.message}}', next: 'confirm' },
    confirm: { type: 'approval', message: 'Approve the check?', next: 'second' },
    second: { type: 'llm', provider: 'scripted', reply: 'approved: {{approval.feedback}}', next: 'done' },
    done: { type: 'end', output: '{{nodes.second.output}}' },
  },
};

/** The user the executions are made for: their memory and thread are the temporary project's, which nothing else reads. */
export const VERIFY_USER_ID = 'admin-verify';
const START_BODY = { user_id: VERIFY_USER_ID, input: { message: 'admin verify' } };
/** How many events the streamed execution reads before it drops the connection. */
const EVENTS_BEFORE_DROP = 2;
/** How long an execution of this workflow may take to settle after its approval: seconds normally, generous for a cold stage. */
const SETTLE_DEADLINE_MS = 90_000;
const POLL_FIRST_MS = 100;
const POLL_MAX_MS = 1000;

type Path = (id: string) => string;
const paths = {
  execute: routePath('PublishedExecute', { workflow_id: VERIFY_WORKFLOW_ID }),
  stream: routePath('PublishedStreamWorkflow', { workflow_id: VERIFY_WORKFLOW_ID }),
  execution: ((id) => routePath('PublishedGetExecution', { execution_id: id })) as Path,
  resume: ((id) => routePath('PublishedStreamExecution', { execution_id: id })) as Path,
  approve: ((id) => routePath('PublishedApprove', { execution_id: id })) as Path,
  reject: ((id) => routePath('PublishedReject', { execution_id: id })) as Path,
  stop: ((id) => routePath('PublishedStopExecution', { execution_id: id })) as Path,
};

const FIX_WORKFLOWS =
  'The Published Workflow API does not answer as its OpenAPI document says: deploy this version (npx cdk deploy; locally restart npm ' +
  'start) and verify again';

/**
 * `workflow`: in a temporary project of its own (publishing replaces a project's active publication, so never the
 * operator's), publishes a scripted workflow with an approval, runs it blocking (it stops at the approval), approves
 * it and polls it to `completed`; then runs it streamed, drops the connection after a few events, resumes with
 * `Last-Event-ID` (through the approval, to the end) and checks that every event id arrived exactly once. The key is
 * revoked and the project unpublished when the checks are done (the stream-writes check uses the key too); executions
 * left unfinished by a failure are stopped or rejected first.
 */
export const workflowCheck: VerifyCheck = {
  name: 'workflow',
  async run(context): Promise<CheckOutcome> {
    const { projectId } = context.project;
    const deps = {
      publications: createPublicationsRepository(context.target.dynamo, context.target.tables.publications),
      now: context.now,
    };
    const definition = parseDefinition(VERIFY_WORKFLOW, `${VERIFY_WORKFLOW_ID}.json`, { allowLoopbackTools: false, now: context.now() });
    context.status(`workflow: publishing ${VERIFY_WORKFLOW_ID} in project ${projectId}`);
    const published = await publish(deps, projectId, [definition]);
    context.cleanup.add(
      `the publication of project ${projectId}`,
      async () => void (await unpublish(deps, projectId)),
      `npm run --silent admin -- unpublish --project ${projectId}${context.adminFlags}`,
    );
    const measured: Record<string, unknown> = { project_id: projectId, publication_id: published.publication_id };
    const api = authorized(context, await context.project.key());

    context.status('workflow: a blocking execution, stopped at its approval');
    const executed = await api.request(paths.execute, { method: 'POST', body: START_BODY }, UNINTERRUPTED);
    const blockingId = field(executed, 'execution_id');
    if (typeof blockingId === 'string') api.started(blockingId);
    context.signal.throwIfAborted();
    if (executed.status !== 200 || typeof blockingId !== 'string') {
      throw new CheckFailure(`POST ${paths.execute} to answer 200 with an execution_id`, answered(executed), FIX_WORKFLOWS, measured);
    }
    measured.executed = blockingId;
    const waiting = await api.settle(blockingId, ['interrupted']);
    const approvalId = (field(waiting, 'pending_approval') as { approval_id?: unknown } | null)?.approval_id;
    if (field(waiting, 'status') !== 'interrupted' || typeof approvalId !== 'string') {
      throw new CheckFailure(
        `GET ${paths.execution(blockingId)} to show the blocking execution stopped at its approval (status interrupted, pending_approval)`,
        answered(waiting),
        FIX_WORKFLOWS,
        measured,
      );
    }
    await api.approve(blockingId);
    const finished = await api.settle(blockingId, ['completed']);
    if (field(finished, 'status') !== 'completed') {
      throw new CheckFailure(
        `GET ${paths.execution(blockingId)} to show the approved execution completed`,
        answered(finished),
        executionFailedTodo(finished),
        measured,
      );
    }

    context.status('workflow: a streamed execution, dropped and resumed');
    const streamed = await streamAndResume(context, api);
    measured.streamed = streamed.executionId;
    measured.stream_events = streamed.ids.length;
    measured.resumes = streamed.resumes;
    return {
      status: 'pass',
      detail:
        `project ${projectId}: a blocking execution stopped at its approval, was approved and completed; ` +
        'a streamed execution dropped after ' +
        `${EVENTS_BEFORE_DROP} events ` +
        `and resumed with Last-Event-ID ${streamed.resumes} times got events 1-${streamed.ids.length}, each once, to complete. ` +
        "The key is revoked and the project unpublished at the end (the publication's workflow item and the execution records stay, " +
        'unreachable; the records expire)',
      ...measured,
    };
  },
};

/** What to do when an execution of the verify workflow failed: its error says why. */
function executionFailedTodo(answer: ApiAnswer): string {
  const error = field(answer, 'error');
  return typeof error === 'string'
    ? `The execution failed with "${error}": read the workflow step function's log (locally the npm start terminal) for the cause`
    : "Read the workflow step function's log (locally the npm start terminal) for the cause";
}

export interface AuthorizedApi {
  /** `signal` replaces the operator's interrupt (UNINTERRUPTED for a request that starts an execution). */
  request(
    path: string,
    request?: { method?: 'GET' | 'POST'; body?: unknown; headers?: Record<string, string> },
    signal?: AbortSignal,
  ): Promise<ApiAnswer>;
  open(
    path: string,
    request: { method?: 'GET' | 'POST'; body?: unknown; headers?: Record<string, string> },
    drop: AbortSignal,
    signal?: AbortSignal,
  ): Promise<Response>;
  /** Remembers an execution this check started: one left unfinished is stopped or rejected at cleanup. */
  started(executionId: string): void;
  /** Polls the execution until its status is one of `statuses` or a final one, or the deadline passes; answers the last read. */
  settle(executionId: string, statuses: string[]): Promise<ApiAnswer>;
  approve(executionId: string): Promise<void>;
}

const FINAL = ['completed', 'failed', 'cancelled'];

/** The Published Workflow API with the temporary key: requests, started executions ended at cleanup, polling, approving. */
export function authorized(context: VerifyContext, key: string): AuthorizedApi {
  const headers = { authorization: `Bearer ${key}` };
  const api: AuthorizedApi = {
    request: (path, request = {}, signal = context.signal) =>
      apiRequest({ apiUrl: context.apiUrl, signal }, path, { ...request, headers: { ...headers, ...request.headers } }),
    open: (path, request, drop, signal = context.signal) =>
      openRequest({ apiUrl: context.apiUrl, signal }, path, { ...request, headers: { ...headers, ...request.headers } }, drop),
    started(executionId) {
      context.cleanup.add(
        `execution ${executionId} (stopped or rejected)`,
        // After an interrupt too: the cleanup's requests are not cut by it.
        () => endExecution((path, request) => api.request(path, request, UNINTERRUPTED), executionId),
        `with a key of project ${context.project.projectId} (npm run --silent admin -- keys create --project ` +
          `${context.project.projectId} --name cleanup --scopes executions.stop,executions.reject${context.adminFlags}), ` +
          `POST ${paths.reject(executionId)} while it waits at its approval, else ${paths.stop(executionId)}; left waiting, ` +
          'it fails by itself after 7 days',
      );
    },
    async settle(executionId, statuses) {
      const deadline = Date.now() + SETTLE_DEADLINE_MS;
      for (let pause = POLL_FIRST_MS; ; pause = Math.min(pause * 1.5, POLL_MAX_MS)) {
        const answer = await api.request(paths.execution(executionId));
        const status = field(answer, 'status');
        if (answer.status !== 200)
          throw new CheckFailure(`GET ${paths.execution(executionId)} to answer 200`, answered(answer), FIX_WORKFLOWS);
        if (statuses.includes(status as string) || FINAL.includes(status as string) || Date.now() > deadline) return answer;
        await sleep(pause, undefined, { signal: context.signal });
      }
    },
    async approve(executionId) {
      const path = paths.approve(executionId);
      const answer = await api.request(path, { method: 'POST', body: { feedback: 'admin verify' } });
      if (answer.status !== 200 || field(answer, 'decision') !== 'approved') {
        throw new CheckFailure(`POST ${path} to answer 200 {decision:"approved", status:"running"}`, answered(answer), FIX_WORKFLOWS);
      }
    },
  };
  return api;
}

/**
 * How long the cleanup keeps ending an execution that moves on under it: a decision's take-up, which a stop waits for
 * (409), lasts seconds; a second Ctrl-C ends the wait sooner.
 */
const END_DEADLINE_MS = 30_000;

/**
 * Stops an execution still going, rejects one waiting at its approval; a finished one is left as it is (false: nothing
 * done). It may move on between the read and the request: reach its approval (the stop answers 409), take up a
 * decision (409, or 503 while the decision is sent) or finish. Each such answer is followed by another read, and the
 * execution is ended as it is then: none is left waiting at an approval that the revoked key could no longer answer.
 */
async function endExecution(request: AuthorizedApi['request'], executionId: string): Promise<boolean> {
  const deadline = Date.now() + END_DEADLINE_MS;
  for (let pause = POLL_FIRST_MS; ; pause = Math.min(pause * 1.5, POLL_MAX_MS)) {
    const read = await request(paths.execution(executionId));
    if (read.status === 404) return false;
    if (read.status !== 200) throw new Error(`GET ${paths.execution(executionId)} answered ${answered(read)}`);
    const status = field(read, 'status');
    const [path, body] =
      status === 'queued' || status === 'running'
        ? [paths.stop(executionId), {}]
        : status === 'interrupted'
          ? [paths.reject(executionId), { feedback: 'admin verify: cleanup' }]
          : [undefined, undefined];
    if (!path) return false;
    const answer = await request(path, { method: 'POST', body });
    if (answer.status === 200) return true;
    const movedOn = answer.status === 409 || answer.status === 503;
    if (!movedOn || Date.now() > deadline) throw new Error(`POST ${path} answered ${answered(answer)}`);
    await sleep(pause);
  }
}

/**
 * One streamed execution: `POST /stream`, dropped after EVENTS_BEFORE_DROP events; resumed with `GET
 * /executions/{id}/stream` and `Last-Event-ID` until its `complete` (interrupted at the approval), approved, and
 * resumed again to the final `complete`. Every id must come exactly once, 1 to the last, none repeated or skipped.
 */
async function streamAndResume(
  context: VerifyContext,
  api: AuthorizedApi,
): Promise<{ executionId: string; ids: number[]; resumes: number }> {
  const ids: number[] = [];
  let complete: { status?: unknown } | undefined;
  const take = (event: StreamedEvent) => {
    if (event.id === undefined) return; // `resume` (a stream that had to end early) carries no id
    ids.push(event.id);
    if (event.event === 'complete') complete = JSON.parse(event.data) as { status?: unknown };
  };
  const drop = new AbortController();
  let response: Response;
  try {
    // Not cut by an interrupt until its headers name the execution, which the cleanup then ends.
    response = await api.open(paths.stream, { method: 'POST', body: START_BODY }, drop.signal, UNINTERRUPTED);
  } catch (error) {
    throw unreachable(context, 'POST', paths.stream, error);
  }
  const executionId = response.headers.get('x-execution-id');
  if (executionId) api.started(executionId);
  // From here an interrupt drops the connection like any other read.
  context.signal.addEventListener('abort', () => drop.abort(), { once: true });
  if (context.signal.aborted) drop.abort();
  context.signal.throwIfAborted();
  if (response.status !== 200 || !executionId || !response.headers.get('content-type')?.startsWith('text/event-stream')) {
    const text = await response.text().catch(() => '');
    throw new CheckFailure(
      `POST ${paths.stream} to answer 200 text/event-stream with X-Execution-Id`,
      answered({ status: response.status, text }),
      FIX_WORKFLOWS,
    );
  }
  await readOrFail(context, 'POST', paths.stream, response, (event) => {
    take(event);
    return ids.length >= EVENTS_BEFORE_DROP ? 'stop' : undefined;
  });
  drop.abort();

  let resumes = 0;
  let approved = false;
  while (complete?.status !== 'completed') {
    if (complete?.status === 'interrupted' && !approved) {
      await api.approve(executionId);
      approved = true;
      complete = undefined;
    } else if (complete !== undefined) {
      throw new CheckFailure(
        'the streamed execution to complete',
        `a complete event with status ${String(complete.status)}`,
        FIX_WORKFLOWS,
        {
          events: ids,
        },
      );
    }
    if (resumes >= 4)
      throw new CheckFailure(
        "the resumed stream to reach the execution's complete event",
        `events ${ids.join(', ')} after ${resumes} resumes`,
        FIX_WORKFLOWS,
        { events: ids },
      );
    resumes += 1;
    const resume = paths.resume(executionId);
    const last = String(ids.at(-1) ?? 0);
    let resumed: Response;
    try {
      resumed = await api.open(resume, { headers: { 'last-event-id': last } }, new AbortController().signal);
    } catch (error) {
      throw unreachable(context, 'GET', resume, error);
    }
    if (resumed.status !== 200) {
      const text = await resumed.text().catch(() => '');
      throw new CheckFailure(
        `GET ${resume} with Last-Event-ID ${last} to answer 200 with the events after it`,
        answered({ status: resumed.status, text }),
        FIX_WORKFLOWS,
        { events: ids },
      );
    }
    await readOrFail(context, 'GET', resume, resumed, (event) => void take(event));
  }
  const problem = idProblem(ids);
  if (problem)
    throw new CheckFailure('every event id of the execution exactly once, from 1 to its complete event', problem, FIX_WORKFLOWS, {
      events: ids,
    });
  return { executionId, ids, resumes };
}

async function readOrFail(
  context: VerifyContext,
  method: string,
  path: string,
  response: Response,
  onEvent: (event: StreamedEvent) => 'stop' | void,
) {
  try {
    await readEventStream(response, onEvent);
  } catch (error) {
    throw unreachable(context, method, path, error);
  }
}

/** What is wrong with an execution's event ids as received: a repeat, or a gap; undefined when they are 1..n once each. */
export function idProblem(ids: readonly number[]): string | undefined {
  const seen = new Set<number>();
  for (const id of ids) {
    if (seen.has(id)) return `event ${id} twice (ids ${ids.join(', ')})`;
    seen.add(id);
  }
  const missing = Array.from({ length: Math.max(0, ...ids) }, (_, i) => i + 1).filter((id) => !seen.has(id));
  return missing.length > 0 ? `no event ${missing.join(', ')} (ids ${ids.join(', ')})` : undefined;
}

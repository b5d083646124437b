import { DescribeExecutionCommand } from '@aws-sdk/client-sfn';
import { createCollectionRepository, type SweepCheckpoint } from '#collection/collection-repository.ts';
import { createCollectionSweeps, manualSweepId } from '#collection/collection-sweeps.ts';
import { createHandoffStore } from '#collection/handoff-store.ts';
import { createQueueRepository } from '#collection/queue-repository.ts';
import { createTasksService, TaskRefusedError, type TaskRule } from '#collection/tasks-service.ts';
import type { EventState } from '#inbound/stored-event.ts';
import { createLinksRepository } from '#inbound/links-repository.ts';
import { NotFoundError } from '#shared/errors.ts';
import type { AdminTarget } from './target.ts';
import { CliStream } from './cli-text.ts';
import { layOutJson } from '#collection/raw-json.ts';
import { requireId, UsageError } from './usage-error.ts';

const SWEEP_POLL_MS = 250;
/** How often the wait also asks Step Functions whether the sweep's execution ended without finishing the sweep. */
const EXECUTION_CHECK_EVERY = 8;
const SWEEP_WAIT_MS = 30 * 60_000;
/** How often, in polls, the wait tells a person at a terminal how far the sweep has come. */
const STATUS_EVERY = 4;
const ENDED_UNFINISHED = new Set(['FAILED', 'TIMED_OUT', 'ABORTED']);

type Flags = Record<string, string | boolean | undefined>;

/**
 * A filter flag's values: split on commas and trimmed. A flag given bare counts as one empty value, which the
 * service refuses as it refuses any empty one.
 */
function filterValues(flags: Flags, name: 'channel' | 'direction'): string[] | undefined {
  const text = flags[name];
  if (text === undefined) return undefined;
  return (typeof text === 'string' ? text : '').split(',').map((value) => value.trim());
}

const textFlag = (value: string | boolean | undefined) => (typeof value === 'string' ? value : '');

/** The service's refusals of a task, in the words of the flags that asked for it: usage mistakes (exit 2). */
const REFUSED_TASK: Record<TaskRule, (linkId: string) => string> = {
  'channel-value': () => '--channel needs one or more values, separated by commas, none empty',
  'direction-value': () => '--direction needs one or more values, separated by commas, none empty',
  'direction-on-dialogs': (linkId) => `--direction filters calls only; link ${linkId} takes dialogs`,
  period: () => 'tasks create --once needs --from and --to, ISO dates with an offset, from before to',
};

function deps(target: AdminTarget) {
  const tasks = createCollectionRepository(target.dynamo, target.tables.collection);
  const links = createLinksRepository(target.dynamo, target.tables.links);
  return {
    tasks,
    links,
    queue: createQueueRepository(target.dynamo, target.tables.inboundEvents),
    taskService: createTasksService({ tasks, links, now: Date.now }),
  };
}

async function boundLink(target: AdminTarget, linkId: string) {
  const link = await deps(target).links.getLink(linkId);
  if (!link) throw new NotFoundError(`link ${linkId} not found`);
  return link;
}

export async function runTasksCommand(target: AdminTarget, args: string[], flags: Flags): Promise<object> {
  const { taskService } = deps(target);
  const [verb] = args;
  switch (verb) {
    case 'create': {
      const linkId = requireId(flags.link as string | undefined, 'tasks create', '--link');
      const request = {
        linkId,
        channels: filterValues(flags, 'channel'),
        directions: filterValues(flags, 'direction'),
        period: flags.once === true ? { from: textFlag(flags.from), to: textFlag(flags.to) } : undefined,
      };
      const task = await taskService.create(request).catch((error: unknown) => {
        // Not found is a refusal (exit 1), as links bind answers it; only the flags' own mistakes are usage mistakes.
        if (error instanceof NotFoundError) throw new NotFoundError(`link ${linkId} not found`);
        if (error instanceof TaskRefusedError) throw new UsageError(REFUSED_TASK[error.rule](linkId));
        throw error;
      });
      const { created_at: _created, ...shown } = task;
      return shown;
    }
    case 'list': {
      const tasks = await taskService.list(typeof flags.link === 'string' ? flags.link : undefined);
      return { tasks: tasks.map((task) => ({ ...task, last_sweep: task.last_sweep ?? null })) };
    }
    default:
      throw new UsageError(`unknown tasks command ${verb ?? '(none)'}`);
  }
}

/** What a sweep's wait shows of it, from its checkpoint (written after each batch), if it has one yet. */
function sweepStatus(sweepId: string, elapsedMs: number, sweep: SweepCheckpoint | undefined): string {
  const progress = sweep
    ? `${sweep.handed_off} handed off, ${sweep.failed} failed, ${sweep.filtered} filtered so far`
    : 'no batch finished yet';
  return `collect: sweep ${sweepId} still running after ${Math.round(elapsedMs / 1000)} s: ${progress}`;
}

/**
 * Starts a sweep of the task on the collection state machine, as the nightly schedule does, and waits for its checkpoint
 * to say it finished, or for its execution to end without finishing it (failed, timed out, stopped), which it reports
 * with the reason. `status` gets a line now and then while it waits (the CLI passes one only when stderr is a terminal).
 */
export async function runCollectCommand(
  target: AdminTarget,
  _args: string[],
  flags: Flags,
  status?: (text: string) => void,
): Promise<object> {
  const taskId = requireId(flags.task as string | undefined, 'collect', '--task');
  const { tasks } = deps(target);
  if (!(await tasks.getTask(taskId))) throw new NotFoundError(`task ${taskId} not found`);
  const services = await target.services();
  const sweepId = manualSweepId();
  const executionArn = await createCollectionSweeps(services.sfn, services.stateMachineArn).start(taskId, sweepId);
  const startedAt = Date.now();
  const deadline = startedAt + SWEEP_WAIT_MS;
  for (let poll = 1; ; poll += 1) {
    const sweep = await tasks.getSweep(taskId, sweepId);
    if (sweep?.finished_at) {
      const { cutoff_key: _cutoff, cursor_key: _cursor, task_id, sweep_id, ...summary } = sweep;
      return { task_id, sweep_id, ...summary };
    }
    if (status && poll % STATUS_EVERY === 0) status(sweepStatus(sweepId, Date.now() - startedAt, sweep));
    if (poll % EXECUTION_CHECK_EVERY === 0) {
      const execution = await services.sfn.send(new DescribeExecutionCommand({ executionArn }));
      // The checkpoint is read once more: a sweep may finish between the two reads.
      if (ENDED_UNFINISHED.has(execution.status ?? '') && !(await tasks.getSweep(taskId, sweepId))?.finished_at) {
        throw new Error(
          `sweep ${sweepId} of task ${taskId} ended unfinished (${execution.status}): ` +
            `${[execution.error, execution.cause].filter(Boolean).join(': ') || 'no reason given'}; the next sweep takes up its events`,
        );
      }
    }
    if (Date.now() > deadline) throw new Error(`sweep ${sweepId} of task ${taskId} has not finished after 30 minutes; it goes on`);
    await new Promise((resolve) => setTimeout(resolve, SWEEP_POLL_MS));
  }
}

const SHOWN_STATE: Record<EventState, 'queued' | 'handed_off' | 'abandoned'> = {
  queued: 'queued',
  // Claimed by a sweep that has not finished with it: not handed off yet.
  handing: 'queued',
  handed_off: 'handed_off',
  abandoned: 'abandoned',
};

export async function runEventsCommand(target: AdminTarget, _args: string[], flags: Flags): Promise<object> {
  const link = await boundLink(target, requireId(flags.link as string | undefined, 'events', '--link'));
  if (!link.source_id) return { events: [] };
  const wanted = typeof flags.state === 'string' ? flags.state : undefined;
  if (wanted !== undefined && !['queued', 'handed_off', 'abandoned'].includes(wanted))
    throw new UsageError('--state must be queued, handed_off or abandoned');
  const events = (await deps(target).queue.listBySource(link.source_id))
    .map((event) => ({
      event_id: Number(event.event_id),
      external_id: event.external_id,
      type: event.type,
      state: SHOWN_STATE[event.state],
      failures: Number(event.delivery_failures ?? 0),
      last_error: event.last_error ?? null,
      received_at: event.received_at,
    }))
    .filter((event) => wanted === undefined || event.state === wanted)
    .sort((a, b) => a.event_id - b.event_id);
  return { events };
}

/**
 * The hand-offs as stored, written as they are read (a busy link's together would not fit in memory), laid out as
 * JSON.stringify lays out `{conversations: [...]}`: their text is spliced into the answer, never parsed and written
 * again, so metadata the sender wrote (a number past double precision, say) is printed as the analysis platform reads it.
 */
export async function runHandoffsCommand(target: AdminTarget, _args: string[], flags: Flags): Promise<CliStream> {
  const link = await boundLink(target, requireId(flags.link as string | undefined, 'handoffs', '--link'));
  const services = await target.services();
  const store = createHandoffStore(services.s3, services.bucket, { announce: () => Promise.reject(new Error('read only')) });
  const indented = flags.json !== true;
  return new CliStream(async (write) => {
    const handoffs = link.source_id ? store.read(link.source_id) : undefined;
    try {
      // The first is read before anything is written, so a listing refused (access, a missing bucket) is a clean error.
      let next = await handoffs?.next();
      await write(indented ? '{\n  "conversations": [' : '{"conversations":[');
      let written = 0;
      for (; next && !next.done; next = await handoffs!.next()) {
        const separator = written === 0 ? '' : ',';
        await write(indented ? `${separator}\n    ${layOutJson(next.value.text, 2, 2)}` : `${separator}${layOutJson(next.value.text)}`);
        written += 1;
      }
      await write(indented ? `${written === 0 ? '' : '\n  '}]\n}\n` : ']}\n');
    } finally {
      await handoffs?.return(undefined);
    }
  });
}

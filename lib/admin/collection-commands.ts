import { randomUUID } from 'node:crypto';
import { DescribeExecutionCommand } from '@aws-sdk/client-sfn';
import { createCollectionRepository, type CollectionTask, type RunCheckpoint } from '#collection/collection-repository.ts';
import { createCollectionRuns } from '#collection/collection-runs.ts';
import { createHandoffStore } from '#collection/handoff-store.ts';
import { createQueueRepository } from '#collection/queue-repository.ts';
import type { EventState } from '#inbound/stored-event.ts';
import { createLinksRepository } from '#inbound/links-repository.ts';
import { parseIsoWithOffset } from '#inbound/iso-timestamp.ts';
import { newId } from '#shared/secrets.ts';
import type { AdminTarget } from './target.ts';
import { CliText } from './cli-text.ts';
import { layOutJson } from '#collection/raw-json.ts';
import { requireId, UsageError } from './usage-error.ts';

const RUN_POLL_MS = 250;
/** How often the wait also asks Step Functions whether the run's execution ended without finishing the run. */
const EXECUTION_CHECK_EVERY = 8;
const RUN_WAIT_MS = 30 * 60_000;
/** How often, in polls, the wait tells a person at a terminal how far the run has come. */
const STATUS_EVERY = 4;
const ENDED_UNFINISHED = new Set(['FAILED', 'TIMED_OUT', 'ABORTED']);

type Flags = Record<string, string | boolean | undefined>;

/** A filter flag's values (comma-separated); a flag given with no value would silently filter nothing, so it is refused. */
function filterValues(flags: Flags, name: 'channel' | 'direction'): string[] {
  const text = flags[name];
  if (text === undefined) return [];
  const values = typeof text === 'string' ? text.split(',').map((value) => value.trim()) : [];
  if (values.length === 0 || values.some((value) => value === '')) throw new UsageError(`--${name} needs one or more values, separated by commas, none empty`);
  return values;
}

function deps(target: AdminTarget) {
  return {
    tasks: createCollectionRepository(target.dynamo, target.tables.collection),
    links: createLinksRepository(target.dynamo, target.tables.links),
    queue: createQueueRepository(target.dynamo, target.tables.inboundEvents),
  };
}

async function boundLink(target: AdminTarget, linkId: string) {
  const link = await deps(target).links.getLink(linkId);
  if (!link) throw new UsageError(`link ${linkId} not found`);
  return link;
}

export async function runTasksCommand(target: AdminTarget, args: string[], flags: Flags): Promise<object> {
  const { tasks } = deps(target);
  const [verb] = args;
  switch (verb) {
    case 'create': {
      const linkId = requireId(flags.link as string | undefined, 'tasks create', '--link');
      const link = await boundLink(target, linkId);
      const directions = filterValues(flags, 'direction');
      // Direction is metadata.direction of calls (webhook spec, section 1 item 7): on dialogs it would filter out every event.
      if (directions.length > 0 && link.connector_type !== 'calls') throw new UsageError(`--direction filters calls only; link ${linkId} takes dialogs`);
      const once = flags.once === true;
      const task: CollectionTask = {
        task_id: newId('tsk_'),
        link_id: linkId,
        kind: once ? 'once' : 'periodic',
        channels: filterValues(flags, 'channel'),
        directions,
        created_at: new Date().toISOString(),
      };
      if (once) {
        const [from, to] = [flags.from, flags.to].map((value) => (typeof value === 'string' ? parseIsoWithOffset(value) : undefined));
        if (from === undefined || to === undefined || from > to) throw new UsageError('tasks create --once needs --from and --to, ISO dates with an offset, from before to');
        Object.assign(task, { from_iso: new Date(from).toISOString(), to_iso: new Date(to).toISOString() });
      }
      await tasks.createTask(task);
      const { created_at: _created, ...shown } = task;
      return shown;
    }
    case 'list': {
      const all = await tasks.listTasks();
      return { tasks: all.filter((task) => typeof flags.link !== 'string' || task.link_id === flags.link).map((task) => ({ ...task, last_run: task.last_run ?? null })) };
    }
    default:
      throw new UsageError(`unknown tasks command ${verb ?? '(none)'}`);
  }
}

/** What a run's wait shows of it, from its checkpoint (written after each batch), if it has one yet. */
function runStatus(runId: string, elapsedMs: number, run: RunCheckpoint | undefined): string {
  const progress = run ? `${run.handed_off} handed off, ${run.failed} failed, ${run.filtered} filtered so far` : 'no batch finished yet';
  return `collect: run ${runId} still running after ${Math.round(elapsedMs / 1000)} s: ${progress}`;
}

/**
 * Starts the run on the collection state machine, as the nightly schedule does, and waits for its checkpoint to say it finished,
 * or for its execution to end without finishing it (failed, timed out, stopped), which it reports with the reason.
 * `status` gets a line now and then while it waits (the CLI passes one only when stderr is a terminal).
 */
export async function runCollectCommand(target: AdminTarget, _args: string[], flags: Flags, status?: (text: string) => void): Promise<object> {
  const taskId = requireId(flags.task as string | undefined, 'collect', '--task');
  const { tasks } = deps(target);
  if (!(await tasks.getTask(taskId))) throw new UsageError(`task ${taskId} not found`);
  const services = await target.services();
  const runId = `manual-${randomUUID()}`;
  const executionArn = await createCollectionRuns(services.sfn, services.stateMachineArn).start(taskId, runId);
  const startedAt = Date.now();
  const deadline = startedAt + RUN_WAIT_MS;
  for (let poll = 1; ; poll += 1) {
    const run = await tasks.getRun(taskId, runId);
    if (run?.finished_at) {
      const { cutoff_key: _cutoff, cursor_key: _cursor, ...summary } = run;
      return summary;
    }
    if (status && poll % STATUS_EVERY === 0) status(runStatus(runId, Date.now() - startedAt, run));
    if (poll % EXECUTION_CHECK_EVERY === 0) {
      const execution = await services.sfn.send(new DescribeExecutionCommand({ executionArn }));
      // The checkpoint is read once more: a run may finish between the two reads.
      if (ENDED_UNFINISHED.has(execution.status ?? '') && !(await tasks.getRun(taskId, runId))?.finished_at) {
        throw new Error(`run ${runId} of task ${taskId} ended unfinished (${execution.status}): ${[execution.error, execution.cause].filter(Boolean).join(': ') || 'no reason given'}; the next run takes up its events`);
      }
    }
    if (Date.now() > deadline) throw new Error(`run ${runId} of task ${taskId} has not finished after 30 minutes; it goes on`);
    await new Promise((resolve) => setTimeout(resolve, RUN_POLL_MS));
  }
}

const SHOWN_STATE: Record<EventState, 'queued' | 'handed_off' | 'abandoned'> = {
  queued: 'queued',
  // Claimed by a run that has not finished with it: not handed off yet.
  handing: 'queued',
  handed_off: 'handed_off',
  abandoned: 'abandoned',
};

export async function runEventsCommand(target: AdminTarget, _args: string[], flags: Flags): Promise<object> {
  const link = await boundLink(target, requireId(flags.link as string | undefined, 'events', '--link'));
  if (!link.source_id) return { events: [] };
  const wanted = typeof flags.state === 'string' ? flags.state : undefined;
  if (wanted !== undefined && !['queued', 'handed_off', 'abandoned'].includes(wanted)) throw new UsageError('--state must be queued, handed_off or abandoned');
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
 * The hand-offs as stored: their text is spliced into the answer, never parsed and written again, so metadata the
 * sender wrote (a number past double precision, say) is printed as the analysis platform reads it.
 */
export async function runHandoffsCommand(target: AdminTarget, _args: string[], flags: Flags): Promise<CliText> {
  const link = await boundLink(target, requireId(flags.link as string | undefined, 'handoffs', '--link'));
  const services = await target.services();
  const store = createHandoffStore(services.s3, services.bucket, { announce: () => Promise.reject(new Error('read only')) });
  const texts = link.source_id ? (await store.list(link.source_id)).map((handoff) => handoff.text) : [];
  const indent = flags.json === true ? 0 : 2;
  return new CliText(`${layOutJson(`{"conversations":[${texts.join(',')}]}`, indent)}\n`);
}

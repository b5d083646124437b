import { parseIsoWithOffset } from '#inbound/iso-timestamp.ts';
import type { Link } from '#inbound/link-model.ts';
import { NotFoundError, ValidationError } from '#shared/errors.ts';
import { newId } from '#shared/secrets.ts';
import type { CollectionRepository, CollectionTask } from './collection-repository.ts';

/**
 * Collection tasks as the operator creates and lists them (the admin CLI's `tasks`): what a task may ask for (a period,
 * channels, directions: lib/admin/README.md, functions/collection/README.md), checked before it is stored. Sweeping a
 * task is collection-service.ts.
 */
export interface TasksServiceDeps {
  tasks: Pick<CollectionRepository, 'createTask' | 'listTasks'>;
  links: { getLink(linkId: string): Promise<Link | undefined> };
  now: () => number;
}

export interface NewTask {
  linkId: string;
  /** Source channels to collect (`source_channel`); absent or empty: every channel. */
  channels?: readonly string[];
  /** Call directions to collect (`metadata.direction`); absent or empty: every direction. Calls links only. */
  directions?: readonly string[];
  /** A one-off task for a period, ISO date-times with an offset. Absent: a periodic task, swept every night. */
  period?: { from: string; to: string };
}

/** The rule a refused task broke: callers word each in their own terms (the CLI names its flags). */
export type TaskRule = 'channel-value' | 'direction-value' | 'direction-on-dialogs' | 'period';

export class TaskRefusedError extends ValidationError {
  constructor(
    readonly rule: TaskRule,
    field: string,
    message: string,
  ) {
    super([{ field, message }], message);
  }
}

/**
 * A filter's values, each naming a channel or direction: an empty or blank one would silently match only events that
 * name none, so it is refused.
 */
function filterValues(values: readonly string[] | undefined, field: 'channels' | 'directions'): string[] {
  const list = [...(values ?? [])];
  if (list.some((value) => value.trim() === '')) {
    throw new TaskRefusedError(
      field === 'channels' ? 'channel-value' : 'direction-value',
      field,
      `every ${field} value must name one; an empty one is not a filter`,
    );
  }
  return list;
}

/** A one-off task's period: two date-times that exist, with an offset, `from` not after `to`; stored in UTC. */
function periodOf(period: { from: string; to: string }): { from_iso: string; to_iso: string } {
  const [from, to] = [parseIsoWithOffset(period.from), parseIsoWithOffset(period.to)];
  if (from === undefined || to === undefined || from > to) {
    throw new TaskRefusedError('period', 'period', 'a one-off task needs from and to, ISO date-times with an offset, from not after to');
  }
  return { from_iso: new Date(from).toISOString(), to_iso: new Date(to).toISOString() };
}

export function createTasksService(deps: TasksServiceDeps) {
  return {
    /**
     * A new task of an existing link: periodic (swept every night) unless it names a period, filtering nothing unless
     * it names channels or directions. Direction is `metadata.direction` of calls (the collection's Filters,
     * functions/collection/README.md): on a dialogs link it would filter out every event, so it is refused there.
     */
    async create(request: NewTask): Promise<CollectionTask> {
      const channels = filterValues(request.channels, 'channels');
      const directions = filterValues(request.directions, 'directions');
      const period = request.period ? periodOf(request.period) : undefined;
      const link = await deps.links.getLink(request.linkId);
      if (!link) throw new NotFoundError(`link ${request.linkId} not found`);
      if (directions.length > 0 && link.connector_type !== 'calls') {
        throw new TaskRefusedError(
          'direction-on-dialogs',
          'directions',
          `a Direction filter applies to calls only; link ${link.link_id} takes ${link.connector_type}`,
        );
      }
      const task: CollectionTask = {
        task_id: newId('tsk_'),
        link_id: link.link_id,
        kind: period ? 'once' : 'periodic',
        channels,
        directions,
        ...period,
        created_at: new Date(deps.now()).toISOString(),
      };
      await deps.tasks.createTask(task);
      return task;
    },

    /** Every task, or those of one link. */
    async list(linkId?: string): Promise<CollectionTask[]> {
      const tasks = await deps.tasks.listTasks();
      return linkId === undefined ? tasks : tasks.filter((task) => task.link_id === linkId);
    },
  };
}

import { describe, expect, it } from 'vitest';
import type { CollectionTask } from '#collection/collection-repository.ts';
import { createTasksService, TaskRefusedError, type NewTask, type TaskRule } from '#collection/tasks-service.ts';
import type { Link } from '#inbound/link-model.ts';
import { NotFoundError } from '#shared/errors.ts';
import { ManualClock } from '../support/fakes/clock.ts';

/** What a collection task may ask for, checked before it is stored (the admin CLI's `tasks create` words the refusals). */
function setup() {
  const clock = new ManualClock(Date.parse('2026-11-20T10:00:00.000Z'));
  const link = (linkId: string, connector: Link['connector_type']): Link => ({
    link_id: linkId,
    state: 'bound',
    connector_type: connector,
    source_id: `src_${linkId}`,
    allow_hosts: [],
    token_prefix: 'whk_',
    current_token_hash: linkId,
    created_at: '2026-11-01T00:00:00.000Z',
  });
  const links = new Map([link('lnk_calls', 'calls'), link('lnk_dialogs', 'dialogs')].map((each) => [each.link_id, each]));
  const stored: CollectionTask[] = [];
  const service = createTasksService({
    tasks: { createTask: async (task) => void stored.push(structuredClone(task)), listTasks: async () => structuredClone(stored) },
    links: { getLink: async (linkId) => links.get(linkId) },
    now: clock.now,
  });
  /** The rule a request breaks, with nothing stored. */
  const refusal = async (request: NewTask): Promise<TaskRule> => {
    const before = stored.length;
    const error = await service.create(request).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(TaskRefusedError);
    expect(stored).toHaveLength(before);
    return (error as TaskRefusedError).rule;
  };
  return { service, stored, refusal };
}

describe('creating a collection task', () => {
  it('makes a periodic task that filters nothing unless asked, and stores it', async () => {
    const { service, stored } = setup();
    const task = await service.create({ linkId: 'lnk_dialogs' });
    expect(task).toEqual({
      task_id: expect.stringMatching(/^tsk_/),
      link_id: 'lnk_dialogs',
      kind: 'periodic',
      channels: [],
      directions: [],
      created_at: '2026-11-20T10:00:00.000Z',
    });
    expect(stored).toEqual([task]);
  });

  it('keeps the channels and directions asked for; Direction on a calls link only', async () => {
    const { service, refusal } = setup();
    expect(await service.create({ linkId: 'lnk_calls', channels: ['sip', 'web'], directions: ['inbound'] })).toMatchObject({
      channels: ['sip', 'web'],
      directions: ['inbound'],
    });
    expect(await service.create({ linkId: 'lnk_dialogs', channels: ['web'] })).toMatchObject({ channels: ['web'], directions: [] });
    // Direction is metadata.direction of calls: on a dialogs link it would filter out every event.
    expect(await refusal({ linkId: 'lnk_dialogs', directions: ['inbound'] })).toBe('direction-on-dialogs');
  });

  it('refuses an empty or blank filter value, which would match only events naming none', async () => {
    const { refusal } = setup();
    expect(await refusal({ linkId: 'lnk_calls', channels: [''] })).toBe('channel-value');
    expect(await refusal({ linkId: 'lnk_calls', channels: ['a', ' ', 'b'] })).toBe('channel-value');
    expect(await refusal({ linkId: 'lnk_calls', directions: [''] })).toBe('direction-value');
  });

  it('makes a one-off task for a period of date-times with an offset, stored in UTC, from not after to', async () => {
    const { service, refusal } = setup();
    expect(
      await service.create({ linkId: 'lnk_calls', period: { from: '2026-11-01T03:00:00+03:00', to: '2026-11-02T00:00:00Z' } }),
    ).toMatchObject({
      kind: 'once',
      from_iso: '2026-11-01T00:00:00.000Z',
      to_iso: '2026-11-02T00:00:00.000Z',
    });
    expect(
      await service.create({ linkId: 'lnk_calls', period: { from: '2026-11-01T00:00:00Z', to: '2026-11-01T00:00:00Z' } }),
    ).toMatchObject({ kind: 'once' });
    for (const period of [
      { from: '2026-11-02T00:00:00Z', to: '2026-11-01T00:00:00Z' },
      { from: '2026-11-01T00:00:00', to: '2026-11-02T00:00:00Z' },
      { from: '2026-02-30T00:00:00Z', to: '2026-11-02T00:00:00Z' },
      { from: 'yesterday', to: '2026-11-02T00:00:00Z' },
      { from: '', to: '' },
    ]) {
      expect(await refusal({ linkId: 'lnk_calls', period }), JSON.stringify(period)).toBe('period');
    }
  });

  it('refuses a task for a link that does not exist', async () => {
    const { service, stored } = setup();
    await expect(service.create({ linkId: 'lnk_nope' })).rejects.toThrow(new NotFoundError('link lnk_nope not found'));
    expect(stored).toEqual([]);
  });
});

describe('listing collection tasks', () => {
  it('lists every task, or those of one link', async () => {
    const { service } = setup();
    const calls = await service.create({ linkId: 'lnk_calls' });
    const dialogs = await service.create({ linkId: 'lnk_dialogs' });
    expect(await service.list()).toEqual([calls, dialogs]);
    expect(await service.list('lnk_dialogs')).toEqual([dialogs]);
    expect(await service.list('lnk_nope')).toEqual([]);
  });
});

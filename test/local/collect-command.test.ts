import { DescribeExecutionCommand, StartExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { describe, expect, it } from 'vitest';
import { createLinksRepository } from '#inbound/links-repository.ts';
import { runCollectCommand, runTasksCommand } from '#lib/admin/collection-commands.ts';
import type { AdminTarget } from '#lib/admin/target.ts';
import { UsageError } from '#lib/admin/usage-error.ts';
import { localTableName } from '#lib/twin/stores.ts';
import { useEmbeddedDynamo } from '../support/embedded-dynamo.ts';

/** The operator's collection commands against the embedded DynamoDB, with Step Functions answering as each test says. */
describe('collection commands', () => {
  const store = useEmbeddedDynamo('collect-command');
  const STATE_MACHINE = 'arn:aws:states:us-east-1:000000000000:stateMachine:local-workflow';

  function target(describeExecution: () => object = () => ({ status: 'RUNNING' })) {
    const started: string[] = [];
    const sfn = {
      send: async (command: unknown) => {
        if (command instanceof StartExecutionCommand) return void started.push(command.input.name!);
        if (command instanceof DescribeExecutionCommand) return { executionArn: command.input.executionArn, ...describeExecution() };
        throw new Error('unexpected command');
      },
    } as unknown as SFNClient;
    const tables = {
      collection: localTableName('collection'),
      links: localTableName('links'),
      inboundEvents: localTableName('inboundEvents'),
    } as AdminTarget['tables'];
    return {
      target: { dynamo: store(), tables, services: () => ({ sfn, stateMachineArn: STATE_MACHINE }) } as unknown as AdminTarget,
      started,
    };
  }

  async function link(connector: 'calls' | 'dialogs') {
    const linkId = `lnk_${Math.random().toString(36).slice(2)}`;
    await createLinksRepository(store(), localTableName('links')).createLink({
      link_id: linkId,
      state: 'bound',
      connector_type: connector,
      source_id: `src_${linkId}`,
      allow_hosts: [],
      token_prefix: 'whk_',
      current_token_hash: linkId,
      created_at: new Date().toISOString(),
    });
    return linkId;
  }

  it('reports a sweep whose execution failed, with its reason, instead of waiting 30 minutes', async () => {
    const { target: failing, started } = target(() => ({
      status: 'FAILED',
      error: 'States.TaskFailed',
      cause: 'stored body of event 7 unreadable',
    }));
    const task = (await runTasksCommand(failing, ['create'], { link: await link('calls') })) as { task_id: string };

    await expect(runCollectCommand(failing, [], { task: task.task_id })).rejects.toThrow(
      /ended unfinished \(FAILED\): States\.TaskFailed: stored body of event 7 unreadable/,
    );
    expect(started).toEqual([expect.stringContaining(task.task_id)]);
  });

  it('refuses a Direction filter on a dialogs link, and a filter flag without values', async () => {
    const { target: admin } = target();
    const dialogs = await link('dialogs');
    const calls = await link('calls');
    await expect(runTasksCommand(admin, ['create'], { link: dialogs, direction: 'inbound' })).rejects.toThrow(
      new UsageError(`--direction filters calls only; link ${dialogs} takes dialogs`),
    );
    for (const [name, flags] of [
      ['channel', { channel: '' }],
      ['channel', { channel: 'a,,b' }],
      ['direction', { direction: ' ' }],
      ['direction', { direction: true }],
    ] as const) {
      await expect(runTasksCommand(admin, ['create'], { link: calls, ...flags })).rejects.toThrow(
        new UsageError(`--${name} needs one or more values, separated by commas, none empty`),
      );
    }
    expect(await runTasksCommand(admin, ['create'], { link: dialogs, channel: 'web, app' })).toMatchObject({
      channels: ['web', 'app'],
      directions: [],
    });
  });
});

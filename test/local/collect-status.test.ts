import { DescribeExecutionCommand, StartExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { describe, expect, it } from 'vitest';
import { createCollectionRepository, type SweepCheckpoint } from '#collection/collection-repository.ts';
import { createLinksRepository } from '#inbound/links-repository.ts';
import { runCollectCommand, runTasksCommand } from '#lib/admin/collection-commands.ts';
import type { AdminTarget } from '#lib/admin/target.ts';
import { localTableName } from '#lib/twin/stores.ts';
import { useEmbeddedDynamo } from '../support/embedded-dynamo.ts';

/**
 * `admin collect` at a terminal: while it waits for the sweep it says now and then how far the sweep has come, from the
 * sweep's checkpoint. The sweep here moves when the command asks Step Functions about it, so it advances with the
 * command's polls, not with the clock.
 */
describe('admin collect waiting for a sweep', () => {
  const store = useEmbeddedDynamo('collect-status');
  const STATE_MACHINE = 'arn:aws:states:us-east-1:000000000000:stateMachine:local-collection';

  it('reports the sweep still running, then its checkpoint counts, until it finishes', async () => {
    const sweeps = createCollectionRepository(store(), localTableName('collection'));
    let started: { task_id: string; sweep_id: string } | undefined;
    let describes = 0;
    const checkpoint = (counts: Partial<SweepCheckpoint>): SweepCheckpoint => ({
      ...started!,
      started_at: new Date().toISOString(),
      finished_at: null,
      handed_off: 0,
      failed: 0,
      filtered: 0,
      pending: 0,
      cutoff_key: 'z',
      cursor_key: '',
      ...counts,
    });
    const sfn = {
      send: async (command: unknown) => {
        if (command instanceof StartExecutionCommand) return void (started = JSON.parse(command.input.input!));
        if (command instanceof DescribeExecutionCommand) {
          describes += 1;
          // A first batch, then the last one.
          if (describes === 1) await sweeps.openSweep(checkpoint({ handed_off: 3, failed: 1 }), Date.now() + 3_600_000);
          if (describes === 2)
            await sweeps.saveProgress(checkpoint({ handed_off: 5, failed: 1, cursor_key: 'z', finished_at: new Date().toISOString() }));
          return { executionArn: command.input.executionArn, status: 'RUNNING' };
        }
        throw new Error('unexpected command');
      },
    } as unknown as SFNClient;
    const tables = {
      collection: localTableName('collection'),
      links: localTableName('links'),
      inboundEvents: localTableName('inboundEvents'),
    } as AdminTarget['tables'];
    const target = { dynamo: store(), tables, services: () => ({ sfn, stateMachineArn: STATE_MACHINE }) } as unknown as AdminTarget;
    const linkId = 'lnk_collectstatus';
    await createLinksRepository(store(), localTableName('links')).createLink({
      link_id: linkId,
      state: 'bound',
      connector_type: 'calls',
      source_id: 'src_collectstatus',
      allow_hosts: [],
      token_prefix: 'whk_',
      current_token_hash: linkId,
      created_at: new Date().toISOString(),
    });
    const task = (await runTasksCommand(target, ['create'], { link: linkId })) as { task_id: string };

    const status: string[] = [];
    const summary = await runCollectCommand(target, [], { task: task.task_id }, (text) => status.push(text));

    expect(summary).toMatchObject({ task_id: task.task_id, handed_off: 5, failed: 1 });
    const sweepId = started!.sweep_id;
    expect(sweepId).toMatch(/^manual-/);
    expect(summary).toMatchObject({ sweep_id: sweepId });
    expect(status[0]).toMatch(new RegExp(`^collect: sweep ${sweepId} still running after \\d+ s: no batch finished yet$`));
    expect(status).toContainEqual(
      expect.stringMatching(
        new RegExp(`^collect: sweep ${sweepId} still running after \\d+ s: 3 handed off, 1 failed, 0 filtered so far$`),
      ),
    );
  });
});

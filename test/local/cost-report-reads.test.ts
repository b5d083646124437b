import { executionRecord } from '../support/execution-record.ts';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ExecutionRecord, ExecutionCostUnits } from '#executions/execution-model.ts';
import { createExecutionCostsRepository, createExecutionsRepository } from '#executions/executions-repository.ts';
import { createExecutionValues } from '#executions/execution-values.ts';
import { createLinkLimits } from '#inbound/link-limits.ts';
import { emptyCostUnits, type CostUnits } from '#shared/metering/cost-meter.ts';
import { createUsageMeter } from '#shared/metering/usage-meter.ts';
import { createUsageRepository } from '#shared/metering/usage-repository.ts';
import { localTableName } from '#lib/twin/stores.ts';
import { useEmbeddedDynamo } from '../support/embedded-dynamo.ts';

const at = (iso: string) => Date.parse(iso);
const units = (change: Partial<CostUnits>): CostUnits => ({ ...emptyCostUnits(), ...change });

/**
 * The cost report's reads, against the embedded DynamoDB: each table's repository reads back the items its writers
 * left, by UTC day, as the usage meter, a link's limits and the executions repository wrote them.
 */
describe('usage repository: a period of usage items (embedded DynamoDB)', () => {
  const store = useEmbeddedDynamo('usage-repository');
  const table = localTableName('usage');
  const usage = () => createUsageRepository(store(), table);

  it("reads one subject's items of the days asked for, both ends included, with their units and models", async () => {
    const subject = `project#${randomUUID()}`;
    const other = `project#${randomUUID()}`;
    const meter = createUsageMeter(store(), table);
    await meter.add(subject, units({ apiRequests: 1 }), at('2025-05-31T23:59:59.999Z'));
    await meter.add(subject, units({ apiRequests: 2 }), at('2025-06-01T00:00:00.000Z'), { 'amazon.nova-lite-v1:0': { input_tokens: 40 } });
    await meter.add(subject, units({ apiRequests: 3 }), at('2025-06-02T12:00:00.000Z'));
    await meter.add(subject, units({ apiRequests: 4 }), at('2025-06-03T23:59:59.999Z'));
    await meter.add(subject, units({ apiRequests: 5 }), at('2025-06-04T00:00:00.000Z'));
    await meter.add(other, units({ apiRequests: 6 }), at('2025-06-02T12:00:00.000Z'));

    const items = await usage().itemsBetween('2025-06-01', '2025-06-03', subject);

    expect(items.map((item) => [item.subject, item.day, item.units.apiRequests]).sort()).toEqual([
      [subject, '2025-06-01', 2],
      [subject, '2025-06-02', 3],
      [subject, '2025-06-03', 4],
    ]);
    const first = items.find((item) => item.day === '2025-06-01')!;
    // Every unit is there, 0 when the item has no counter for it; the meter's own write unit is counted.
    expect(first.units).toEqual({ ...emptyCostUnits(), apiRequests: 2, dynamoWriteUnits: 1 });
    expect(first.models).toEqual({ 'amazon.nova-lite-v1:0': { input_tokens: 40 } });
  });

  it("reads every subject's items without one, a link's limits item with its day", async () => {
    const link = randomUUID();
    const project = `project#${randomUUID()}`;
    await createUsageMeter(store(), table).add(project, units({ apiRequests: 1 }), at('2024-02-10T08:00:00.000Z'));
    await createLinkLimits(store(), table).take(link, 'event', at('2024-02-11T08:00:00.000Z'), {
      units: units({ webhookEvents: 1, apiRequests: 1 }),
      carried: () => undefined,
    });
    await createUsageMeter(store(), table).add(project, units({ apiRequests: 1 }), at('2024-02-12T08:00:00.000Z'));

    const items = await usage().itemsBetween('2024-02-10', '2024-02-11');

    expect(items.map((item) => [item.subject, item.day, item.units.webhookEvents]).sort()).toEqual([
      [`link#${link}`, '2024-02-11', 1],
      [project, '2024-02-10', 0],
    ]);
  });
});

describe('execution costs repository: the executions that finished in a period (embedded DynamoDB)', () => {
  const store = useEmbeddedDynamo('execution-costs');
  const table = localTableName('executions');
  const spent: ExecutionCostUnits = { apiRequests: 1, stateTransitions: 4, models: { scripted: { output_tokens: 3 } } };

  /** A status record as the executions repository writes it; large values never arise here, so no bucket. */
  async function recorded(change: Partial<ExecutionRecord>): Promise<string> {
    const executionId = randomUUID();
    const record = executionRecord({
      execution_id: executionId,
      project_id: 'costed',
      workflow_id: executionId,
      status: 'completed',
      total_steps: 1,
      created_at: '2025-01-01T00:00:00.000Z',
      ...change,
    });
    await createExecutionsRepository(store(), table, createExecutionValues(undefined)).create(record, Date.now() + 60_000);
    return executionId;
  }

  it('reads the finished executions with costs of the days asked for, both ends included, of one project or all', async () => {
    await recorded({ finished_at: '2025-02-28T23:59:59.999Z', cost_units: spent });
    const first = await recorded({ finished_at: '2025-03-01T00:00:00.000Z', cost_units: spent });
    const last = await recorded({ finished_at: '2025-03-31T23:59:59.999Z', cost_units: spent, project_id: 'other' });
    await recorded({ finished_at: '2025-04-01T00:00:00.000Z', cost_units: spent });
    await recorded({ status: 'running', cost_units: spent });
    await recorded({ finished_at: '2025-03-15T00:00:00.000Z' });
    const costs = createExecutionCostsRepository(store(), table);

    const all = await costs.finishedBetween('2025-03-01', '2025-03-31');

    // Not the day before or after, an execution still running, nor one that kept no costs.
    expect(all.map((cost) => cost.workflow_id).sort()).toEqual([first, last].sort());
    // Only what the report prices: whose workflow it was and what it spent.
    expect(all.find((cost) => cost.workflow_id === first)).toEqual({ project_id: 'costed', workflow_id: first, cost_units: spent });
    expect((await costs.finishedBetween('2025-03-01', '2025-03-31', 'other')).map((cost) => cost.workflow_id)).toEqual([last]);
  });
});

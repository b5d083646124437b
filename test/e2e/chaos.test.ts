import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/local-names.ts';
import { EXAMPLE_FAULTS, runChaos, type ChaosRun } from '../chaos/chaos.ts';
import { readStoredState } from '../chaos/stored-state.ts';

/**
 * The chaos suite, bounded: `npm run chaos` drives the same mix for minutes; here it runs for 20 s, and on to at least
 * 200 answers on a slow machine (so every kind of request and fault has its chance whatever the speed), on a fixed seed
 * (a failure replays with TWIN_FAULTS_SEED), with the state machines' retry pauses shortened, and every invariant must
 * hold. Then the stored state is broken on purpose, to show the check can fail.
 */
const SEED = 20_261_128;
let chaos: ChaosRun;

beforeAll(async () => {
  chaos = await runChaos({
    faults: EXAMPLE_FAULTS,
    seed: SEED,
    durationMs: 20_000,
    minAnswers: 200,
    concurrency: 4,
    settleMs: 90_000,
    collectEveryMs: 8_000,
    retryIntervalMs: 50,
    progress: (line) => process.stderr.write(`${new Date().toISOString()} ${line}\n`),
  });
}, 600_000);
afterAll(async () => {
  await chaos?.close();
});

describe('chaos, bounded', () => {
  it('drives every kind of request under every kind of fault, and every invariant holds', () => {
    const { report } = chaos;
    expect(chaos.violations.map((violation) => `${violation.invariant}: ${violation.detail}`)).toEqual([]);
    expect(report.acknowledged_events).toBeGreaterThan(0);
    expect(report.duplicates).toBeGreaterThan(0);
    expect(report.runs).toBeGreaterThan(0);
    expect(report.streams).toBeGreaterThan(0);
    expect(report.collections).toBeGreaterThan(0);
    // The faults were really there: the store kinds are drawn on every store call a function makes.
    expect(report.faults['dynamodb:throttle']).toBeGreaterThan(0);
    expect(report.faults['dynamodb:error']).toBeGreaterThan(0);
    expect(report.faults['lambda:delay']).toBeGreaterThan(0);
    expect(report.retries).toBeGreaterThan(0);
  });

  it('reports a violation when an acknowledged event is stored again under another id, as a put without the deduplication condition would', async () => {
    const stored = await readStoredState(chaos.dataDir);
    const [externalId, [item]] = [...stored.events].find(([, items]) => items.length === 1)! as [
      string,
      { source_id: string; event_id: number }[],
    ];
    stored.close();
    const dynamo = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: chaos.twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
    );
    try {
      await dynamo.send(
        new PutCommand({
          TableName: chaos.twin.twin.tables.inboundEvents,
          Item: { source_id: item!.source_id, external_id: externalId, event_id: item!.event_id + 1_000_000, state: 'queued' },
        }),
      );
    } finally {
      dynamo.destroy();
    }
    const violations = await chaos.recheck();
    expect(violations).toContainEqual({
      invariant: 'acknowledged-stored-once',
      detail: `${externalId}: acknowledged as ${item!.event_id}, stored as ${item!.event_id + 1_000_000}`,
    });
  });
});

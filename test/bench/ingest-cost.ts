import type { LocalTwin } from '#lib/twin/twin.ts';
import { callEvent, textEvent } from '../support/events.ts';
import { runAtConcurrency } from './stats.ts';

/** Events of each kind sent on a link of their own: a few hundred, within the link's 600 requests a minute. */
const EVENTS = Number(process.env.BENCH_COST_EVENTS ?? 300);

/**
 * What a call event and a small dialog (two messages) cost per million, by the product's own meter: EVENTS of each on
 * a fresh link, then the link's `cost report` (its webhook requests only: no nightly collection ran).
 */
export async function ingestCostBench(deps: {
  twin: LocalTwin;
  admin: (...argv: string[]) => Promise<Record<string, string>>;
}): Promise<{ call_events: number | null; dialogs: number | null }> {
  const perMillion = async (type: 'calls' | 'dialogs', body: () => object) => {
    const issued = await deps.admin('links', 'issue', '--type', type);
    await deps.admin('links', 'bind', issued.link_id!);
    const refused: number[] = [];
    await runAtConcurrency(EVENTS, 8, async () => {
      const answer = await fetch(`${deps.twin.webhookUrl}/api/v1/webhooks/${issued.token}/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body()),
      });
      await answer.arrayBuffer();
      if (answer.status !== 201) refused.push(answer.status);
    });
    if (refused.length > 0)
      throw new Error(`ingest cost (${type}): ${refused.length} answers were not 201 (${[...new Set(refused)].join(',')})`);
    const report = (await deps.admin('cost', 'report', '--link', issued.link_id!)) as unknown as {
      per_million_webhook_events: number | null;
    };
    return report.per_million_webhook_events;
  };
  const figures = { call_events: await perMillion('calls', () => callEvent()), dialogs: await perMillion('dialogs', () => textEvent(2)) };
  console.log(
    `ingest cost per million (${EVENTS} of each, the meter's cost report): calls $${figures.call_events}, dialogs $${figures.dialogs}`,
  );
  return figures;
}

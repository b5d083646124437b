import { isDeepStrictEqual } from 'node:util';
import type { InvariantInput, Violate } from './invariants.ts';
import { TERMINAL } from './outcomes.ts';

/**
 * A stream, resumed as often as it was cut, yields every event id once, in order, up to its `complete`, which says how the
 * execution ended; a subscription to `/events` yields ids in order, ends right after the final status, which is the
 * execution's, and shows a decision made while it listened.
 */
export function checkStreams({ record, finals }: InvariantInput, violate: Violate): void {
  for (const stream of record.streams) {
    const name = stream.executionId || `a ${stream.workflow} stream`;
    if (stream.executionId === '') {
      violate('stream-exactly-once', `${name}: never opened (answers ${stream.statuses.join(', ')})`);
      continue;
    }
    if (stream.endedBefore204) violate('stream-exactly-once', `${name}: answered 204 before its complete was read`);
    const expected = Array.from({ length: stream.ids.length }, (_, index) => index + 1);
    if (stream.completeStatus === undefined)
      violate('stream-exactly-once', `${name}: no complete after ${stream.resumes} resumes (answers ${stream.statuses.join(', ')})`);
    else if (stream.ids.join(',') !== expected.join(',')) violate('stream-exactly-once', `${name}: ids ${stream.ids.join(',')}`);
    const final = finals.get(stream.executionId)?.status;
    if (stream.completeStatus !== undefined && final !== undefined && TERMINAL.has(final) && stream.completeStatus !== final)
      violate('stream-exactly-once', `${name}: its complete says ${stream.completeStatus}, the execution is ${final}`);
  }

  for (const subscription of record.subscriptions) {
    const { executionId, events } = subscription;
    const ids = events.map((event) => event.id);
    if (ids.some((id, index) => id === undefined || (index > 0 && id <= ids[index - 1]!)))
      violate('lifecycle-events', `${executionId}: event ids ${ids.join(',')}`);
    const finalAt = events.findIndex((event) => event.event === 'status' && TERMINAL.has((event.data as { status: string }).status));
    if (finalAt !== -1 && finalAt !== events.length - 1) violate('lifecycle-events', `${executionId}: events after its final status`);
    if (subscription.ended === 'cut') {
      violate('lifecycle-events', `${executionId}: no final status after ${subscription.resumes} resumes`);
      continue;
    }
    if (subscription.ended !== 'final') continue;
    const last = events.at(-1)!.data as { status: string; output: unknown; error: unknown };
    const final = finals.get(executionId);
    if (
      final &&
      (last.status !== final.status || !isDeepStrictEqual(last.output, final.output ?? null) || last.error !== (final.error ?? null))
    )
      violate('lifecycle-events', `${executionId}: final status event ${JSON.stringify(last)}, the execution ${JSON.stringify(final)}`);
    const run = record.runs.get(executionId);
    const first = events[0]?.data as { status?: string } | undefined;
    const applied = run?.workflow === 'gate' && final?.status === 'completed' ? (final.output as string).split(':')[0] : undefined;
    if (subscription.beforeDecision && first?.status === 'interrupted' && applied) {
      const decision = events.find((event) => event.event === 'decision');
      if ((decision?.data as { decision?: string } | undefined)?.decision !== applied)
        violate(
          'lifecycle-events',
          `${executionId}: ${applied} while subscribed, decision event ${JSON.stringify(decision?.data ?? null)}`,
        );
    }
  }
}

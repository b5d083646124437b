import { randomUUID } from 'node:crypto';
import type { ExecutionRecord, ExecutionStatus } from './execution-journal.ts';
import type { LocalFunction } from './lambda-invoke.ts';

/** The ends EventBridge's rule on a state machine hears of (the product's rule asks for these). */
export const NOTIFIED_STATUSES: readonly ExecutionStatus[] = ['FAILED', 'TIMED_OUT', 'ABORTED'];

/**
 * EventBridge's "Step Functions Execution Status Change" for an execution that ended, to each subscriber in turn, each
 * tried four times with backoff. False when one still failed or the process closed meanwhile: the caller keeps the
 * notice owed, and the next process delivers it again (at least once, as EventBridge).
 */
export async function deliverStatusChange(
  record: ExecutionRecord,
  subscribers: readonly LocalFunction[],
  closed: () => boolean,
): Promise<boolean> {
  const event = statusChangeEvent(record);
  for (const subscriber of subscribers) {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await subscriber(event);
        break;
      } catch {
        if (attempt >= 3 || closed()) return false;
        await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** attempt));
      }
    }
  }
  return true;
}

function statusChangeEvent(record: ExecutionRecord) {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Step Functions Execution Status Change',
    source: 'aws.states',
    account: record.stateMachineArn.split(':')[4],
    time: new Date(record.stopDate ?? Date.now()).toISOString(),
    region: record.stateMachineArn.split(':')[3],
    resources: [record.executionArn],
    detail: {
      executionArn: record.executionArn,
      stateMachineArn: record.stateMachineArn,
      name: record.name,
      status: record.status,
      startDate: record.startDate,
      stopDate: record.stopDate ?? null,
      input: record.input,
      output: record.output ?? null,
      error: record.error ?? null,
      cause: record.cause ?? null,
    },
  };
}

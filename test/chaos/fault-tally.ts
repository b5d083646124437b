import type { FaultKind, FaultPlan } from '#lib/twin/faults.ts';

/** One fault the twin injected, as the invariants weigh it: which function it hit, and when. */
export interface FaultRecord {
  kind: FaultKind;
  functionName: string;
  operation?: string;
  at: number;
}

/** Every fault the plan injects from now on, in order. */
export function tallyFaults(plan: FaultPlan): { faults: FaultRecord[]; stop(): void } {
  const faults: FaultRecord[] = [];
  const stop = plan.onFault((fault) =>
    faults.push({
      kind: fault.kind,
      functionName: fault.functionName,
      ...(fault.operation ? { operation: fault.operation } : {}),
      at: Date.now(),
    }),
  );
  return { faults, stop };
}

/** The functions of the workflow state machine whose failures can end an execution failed (functions/task-functions.ts). */
const ENGINE_FUNCTIONS: ReadonlySet<string> = new Set(['WorkflowStep', 'WorkflowAwaitApproval']);

/**
 * How many faults of a kind in a row one task of the workflow state machine outlasts, by its Retry
 * (statemachines/workflow.asl.json): a crashed or failed invocation is `Runtime.ExitError` (MaxAttempts 3); a store's
 * throttle or error reaches the ASL as `TransientServiceError` (MaxAttempts 6; the SDK's own retries before it are not
 * counted, so the bound is loose, never tight). A delay fails nothing.
 */
const OUTLASTED: Record<FaultKind, number> = {
  'lambda:error': 3,
  'lambda:crash-after-write': 3,
  'dynamodb:throttle': 6,
  'dynamodb:error': 6,
  's3:error': 6,
  'sfn:throttle': 6,
  'bedrock:throttle': 6,
  'ssm:throttle': 6,
  'lambda:delay': Number.POSITIVE_INFINITY,
};

/** Per kind, the faults that hit the engine and how many failed executions they can account for at most. */
export function failureBound(faults: readonly FaultRecord[]): Record<string, { faults: number; failures: number }> {
  const bound: Record<string, { faults: number; failures: number }> = {};
  for (const fault of faults) {
    if (!ENGINE_FUNCTIONS.has(fault.functionName)) continue;
    const entry = (bound[fault.kind] ??= { faults: 0, failures: 0 });
    entry.faults += 1;
    entry.failures = Math.floor(entry.faults / (OUTLASTED[fault.kind] + 1));
  }
  return bound;
}

/** Faults that can make a function do again what it had done (every kind but a delay), within a time window. */
export function repeatingFaults(faults: readonly FaultRecord[], functionName: string, from = 0, to = Number.POSITIVE_INFINITY): number {
  return faults.filter(
    (fault) => fault.functionName === functionName && fault.kind !== 'lambda:delay' && fault.at >= from && fault.at <= to,
  ).length;
}

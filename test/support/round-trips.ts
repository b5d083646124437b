import type { ServedRequest } from '#lib/twin/iam/front-door.ts';
import type { TestTwin } from './local-twin.ts';

/**
 * Sequential round trips in a set of store requests: requests that overlap in time ran side by side and count as one
 * step; a request that starts after everything before it ended is a step of its own.
 */
export function sequentialSteps(requests: readonly ServedRequest[]): number {
  let steps = 0;
  let stepEnd = Number.NEGATIVE_INFINITY;
  for (const request of [...requests].sort((a, b) => a.startedAtMs - b.startedAtMs)) {
    if (request.startedAtMs >= stepEnd) {
      steps += 1;
      stepEnd = request.endedAtMs;
    } else {
      stepEnd = Math.max(stepEnd, request.endedAtMs);
    }
  }
  return steps;
}

/**
 * Collects what one function (its principal is its id) sends to the stores while `work` runs, and until the twin has
 * no invocation of it in flight: a function writes its usage after its answer, and each store answer is recorded as
 * it is sent, before the function that awaited it can end.
 */
export function storeRequestRecorder() {
  const all: ServedRequest[] = [];
  return {
    onStoreRequest: (served: ServedRequest) => void all.push(served),
    async during(principal: string, work: () => Promise<unknown>, twin: Pick<TestTwin, 'settled'>): Promise<ServedRequest[]> {
      const before = all.length;
      await work();
      await twin.settled([principal]);
      return all.slice(before).filter((served) => served.principal === principal);
    },
  };
}

import type { ServedRequest } from '#lib/twin/iam/front-door.ts';
import type { TestTwin } from './local-twin.ts';

/**
 * Sequential round trips in a set of store requests: requests that overlap ran side by side and count as one step; a
 * request that arrived after everything before it was answered is a step of its own. Told by the front doors' order
 * of events, never by clock readings, which a loaded machine takes late.
 */
export function sequentialSteps(requests: readonly ServedRequest[]): number {
  let steps = 0;
  let stepEnd = Number.NEGATIVE_INFINITY;
  for (const request of [...requests].sort((a, b) => a.arrived - b.arrived)) {
    if (request.arrived > stepEnd) {
      steps += 1;
      stepEnd = request.answered;
    } else {
      stepEnd = Math.max(stepEnd, request.answered);
    }
  }
  return steps;
}

/**
 * Collects what one function (its principal is its id) sends to the stores while `work` runs, and until the twin has
 * no invocation of it in flight: a function writes its usage after its answer, and each store answer is recorded as
 * it is sent, before the function that awaited it can end. Answers the requests in the order they arrived.
 */
export function storeRequestRecorder() {
  const all: ServedRequest[] = [];
  return {
    onStoreRequest: (served: ServedRequest) => void all.push(served),
    async during(principal: string, work: () => Promise<unknown>, twin: Pick<TestTwin, 'settled'>): Promise<ServedRequest[]> {
      const before = all.length;
      await work();
      await twin.settled([principal]);
      // In the order they arrived: each is recorded as its answer ends, which is no order its sender knew.
      return all
        .slice(before)
        .filter((served) => served.principal === principal)
        .sort((a, b) => a.arrived - b.arrived);
    },
  };
}

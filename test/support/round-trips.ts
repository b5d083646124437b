import type { ServedRequest } from '#lib/twin/iam/front-door.ts';

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
    async during(principal: string, work: () => Promise<unknown>, twin: { invocationsInFlight(functionId: string): number }): Promise<ServedRequest[]> {
      const before = all.length;
      await work();
      for (const deadline = Date.now() + 60_000; twin.invocationsInFlight(principal) > 0; ) {
        if (Date.now() > deadline) throw new Error(`${principal} still has an invocation in flight after 60 s`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return all.slice(before).filter((served) => served.principal === principal);
    },
  };
}

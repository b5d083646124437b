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

/** Collects what one function sends to the stores while `work` runs. */
export function storeRequestRecorder() {
  const all: ServedRequest[] = [];
  return {
    onStoreRequest: (served: ServedRequest) => void all.push(served),
    async during(principal: string, work: () => Promise<unknown>): Promise<ServedRequest[]> {
      const before = all.length;
      await work();
      // The last answer's `finish` may land a moment after the client has the response.
      await new Promise((resolve) => setTimeout(resolve, 50));
      return all.slice(before).filter((served) => served.principal === principal);
    },
  };
}

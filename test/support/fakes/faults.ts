/**
 * Failure injection for the in-memory fakes: each fake method first asks its `Faults` whether a planned
 * failure (or a planned action, such as a concurrent write racing the call) is due. Unplanned calls behave
 * like the real store.
 */
type Planned = { error?: Error; action?: () => void | Promise<void>; remaining: number };

export class Faults<Method extends string> {
  private readonly planned = new Map<Method, Planned[]>();
  /** How many times each method was called (failed calls included). */
  readonly calls = new Map<Method, number>();

  /** The next `times` calls of `method` throw `error` (Infinity: every call from now on). */
  failNext(method: Method, error: Error, times = 1): this {
    this.queue(method).push({ error, remaining: times });
    return this;
  }

  /**
   * Runs `action` once, just before the next call of `method` does its work (a racing writer, a clock step);
   * a failure planned after it applies to that same call.
   */
  beforeNext(method: Method, action: () => void | Promise<void>): this {
    this.queue(method).push({ action, remaining: 1 });
    return this;
  }

  /** Drops every planned failure and action. */
  clear(): void {
    this.planned.clear();
  }

  count(method: Method): number {
    return this.calls.get(method) ?? 0;
  }

  /** Called by the fakes at the start of each method. */
  async enter(method: Method): Promise<void> {
    this.calls.set(method, this.count(method) + 1);
    const queue = this.planned.get(method) ?? [];
    // Actions planned ahead of a failure run first, so `beforeNext` then `failNext` both apply to the same call.
    for (let next = queue[0]; next; next = queue[0]) {
      next.remaining -= 1;
      if (next.remaining <= 0) queue.shift();
      if (next.action) await next.action();
      if (next.error) throw next.error;
    }
  }

  private queue(method: Method): Planned[] {
    let queue = this.planned.get(method);
    if (!queue) this.planned.set(method, (queue = []));
    return queue;
  }
}

/** An error shaped like the AWS SDK's: what the product code looks at is its `name`. */
export function awsError(name: string, message = `${name} (injected by a test fake)`): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** What DynamoDB throws when a write's condition does not hold; the repositories turn it into an answer. */
export const conditionFailed = () => awsError('ConditionalCheckFailedException', 'The conditional request failed');

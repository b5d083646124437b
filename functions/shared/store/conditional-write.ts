/**
 * Conditional DynamoDB writes, the one idiom: a failed condition is an expected answer (already bound, already a
 * duplicate, limit reached, not in that status), not an error. Nothing else catches ConditionalCheckFailedException.
 */

/** The write's output when its condition held; undefined when it did not. */
export async function ifConditionHolds<Output>(write: Promise<Output>): Promise<Output | undefined> {
  try {
    return await write;
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}

/** Whether the write's condition held. */
export async function conditionHeld(write: Promise<unknown>): Promise<boolean> {
  return (await ifConditionHolds(write)) !== undefined;
}

/** For the cost meter only: a failed condition is still billed a write unit. */
export function isConditionFailure(error: unknown): boolean {
  return (error as Error | undefined)?.name === 'ConditionalCheckFailedException';
}

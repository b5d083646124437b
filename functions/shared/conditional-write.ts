/**
 * Runs a conditional DynamoDB write and answers whether its condition held. A failed condition is an
 * expected answer (already bound, already a duplicate, limit reached), not an error.
 */
export async function conditionHeld(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

export function isConditionFailure(error: unknown): boolean {
  return (error as Error | undefined)?.name === 'ConditionalCheckFailedException';
}

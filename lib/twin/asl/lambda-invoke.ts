import type { Json } from './paths.ts';
import { StatesError } from './states-error.ts';

/** A Lambda function as a Task reaches it: the twin's Lambda host, bound to the function's ARN. */
export type LocalFunction = (payload: unknown) => Promise<unknown>;

/** Lambda's invoke contract: JSON in, JSON out, and a thrown error surfaces as Error = its name, Cause = the error report. */
export async function invokeFunction(functions: Record<string, LocalFunction>, functionArn: string, payload: Json): Promise<Json> {
  const fn = functions[functionArn];
  if (!fn) throw new StatesError('Lambda.ResourceNotFoundException', `Function not found: ${functionArn}`);
  try {
    const result = await fn(JSON.parse(JSON.stringify(payload)));
    return result === undefined ? null : (JSON.parse(JSON.stringify(result)) as Json);
  } catch (error) {
    const failure = error as Error;
    const errorType = failure.name || 'Error';
    throw new StatesError(errorType, JSON.stringify({ errorType, errorMessage: failure.message }));
  }
}

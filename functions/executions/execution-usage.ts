/**
 * What an execution spent on models and tools, for finance and for callers: in the execution status and the `complete`
 * event. The state machine's cursor carries it between steps (five numbers), so counting costs no write of its own.
 * Scripted providers count their turns and streamed tokens as a model would, with no input tokens.
 */
export interface ExecutionUsage {
  model_calls: number;
  input_tokens: number;
  output_tokens: number;
  tool_calls: number;
  images: number;
}

export function emptyUsage(): ExecutionUsage {
  return { model_calls: 0, input_tokens: 0, output_tokens: 0, tool_calls: 0, images: 0 };
}

/** A cursor from before usage was counted starts at zero. */
export function usageOf(value: Partial<ExecutionUsage> | undefined): ExecutionUsage {
  return { ...emptyUsage(), ...value };
}

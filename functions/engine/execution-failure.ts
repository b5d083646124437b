/** An error in the workflow itself (its definition or data), recorded as the execution's `error` rather than retried. */
export class ExecutionFailure extends Error {}

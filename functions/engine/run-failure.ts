/** An error in the workflow itself (its definition or data), recorded as the run's `error` rather than retried. */
export class RunFailure extends Error {}

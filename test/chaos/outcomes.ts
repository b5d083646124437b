// What the invariants' checks share, apart from invariants.ts: it imports the checks, and a check importing it back
// would close a cycle.

/** The statuses an execution ends in. */
export const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** An AWS error's name in a body meant for callers (ThrottlingException, SlowDown, Runtime.ExitError, States.Timeout...). */
export const AWS_ERROR_NAME =
  /\b[A-Z][a-z]+(?:[A-Z][a-z]+)*(?:Exception|Error|Fault)\b|\bSlowDown\b|\b(?:Runtime|Sandbox|Lambda|States|Function)\.[A-Z]\w+/;

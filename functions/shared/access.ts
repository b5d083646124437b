/**
 * The vocabulary of access to the Published Workflow API, shared by the route table, the key service and the
 * execution services: the scopes, exactly as the API's contract names them (each operation's `x-scope` in the OpenAPI
 * document, the table in functions/published/README.md#the-contract-in-brief), and who a request comes from.
 */
export const SCOPES = [
  'workflows.read',
  'workflows.execute',
  'workflows.stream',
  'executions.read',
  'executions.stop',
  'executions.approve',
  'executions.reject',
  'events.subscribe',
] as const;

export type Scope = (typeof SCOPES)[number];

/** Who is calling: established by authentication, and all a service needs to know to keep projects apart. */
export interface Caller {
  projectId: string;
  /** The key's id (never its value): a correlation id for logs, and the scope of its open streams. */
  keyId?: string;
  /** How many streams the key may hold open at once; unset, the default (limits.ts, DEFAULT_MAX_OPEN_STREAMS_PER_KEY). */
  maxOpenStreams?: number;
}

import type { AdminTarget, VerifyServices } from './target.ts';

/**
 * What every check of `admin verify` shares: its name and result, the context it runs in (the target, the API's
 * address, the operator's interrupt, what to undo at the end), and the one way a check says it failed: a line with
 * what was expected, what came back, and what to do.
 */

/** The checks, in the order they run and are reported. */
export const CHECK_NAMES = [
  'openapi',
  'webhook',
  'workflow',
  'models',
  'step-model',
  'stream-writes',
  'cost-tag',
  'concurrency',
  'alarms',
] as const;
type CheckName = (typeof CHECK_NAMES)[number];

/** `warn` and `skip` never fail the command; `fail` does. */
export type CheckStatus = 'pass' | 'fail' | 'warn' | 'skip';

/** A check's answer: its status, one line a person reads, and what it measured (named fields, kept in the JSON). */
export interface CheckOutcome {
  status: CheckStatus;
  detail: string;
  [measurement: string]: unknown;
}

export interface CheckResult extends CheckOutcome {
  check: CheckName | 'cleanup';
}

/**
 * Things the checks created, undone when every check has run (last made, first undone), also after a failure or
 * SIGINT. `add` answers a function that undoes the thing now, as a check's own step (a revocation the check then
 * tests); what was undone that way is not undone again.
 */
export interface Cleanup {
  /**
   * `what` names the thing for the operator when undoing it fails, and `manually` says how to finish the job. `undo`
   * answers false when it found nothing to undo (an execution that had finished), which the report then leaves out.
   */
  add(what: string, undo: () => Promise<boolean | void>, manually: string): () => Promise<void>;
}

/**
 * The temporary project and its key, shared by the checks that call the Published Workflow API (workflow,
 * stream-writes): made by the first that needs them, revoked at the end.
 */
export interface TemporaryProject {
  projectId: string;
  /** The key's value, created on first use (revoked at the end). */
  key(): Promise<string>;
}

export interface VerifyContext {
  target: AdminTarget;
  services: VerifyServices;
  /** The API's base URL, no trailing slash: `<ApiUrl>` (with its stage) on AWS, the twin's URL locally. */
  apiUrl: string;
  /** The webhook API's base URL, no trailing slash: `<WebhookApiUrl>` on AWS, the twin's webhook URL locally. */
  webhookUrl: string;
  /** Aborted on SIGINT: a check stops where it is, and the cleanup still runs. */
  signal: AbortSignal;
  cleanup: Cleanup;
  project: TemporaryProject;
  /** ` --stack NAME --region R` on AWS, else empty: for an admin command the operator runs by hand on the same deployment. */
  adminFlags: string;
  now: () => number;
  /** At a terminal, what the check is doing now. */
  status: (text: string) => void;
}

export interface VerifyCheck {
  name: CheckName;
  run(context: VerifyContext): Promise<CheckOutcome>;
}

/**
 * Thrown by a check that found the deployment wrong: one line, `expected …; got …. <what to do>`, plus what it had
 * measured so far.
 */
export class CheckFailure extends Error {
  override name = 'CheckFailure';
  constructor(
    expected: string,
    got: string,
    todo: string,
    readonly measurements: Record<string, unknown> = {},
  ) {
    super(`expected ${expected}; got ${got}. ${todo}`);
  }
}

/** At most `max` characters of a body, on one line: enough to recognize an answer, never a wall of text. */
export function shortText(text: string, max = 160): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line || '(empty)';
}

/*
 * Thresholds and sizes of the checks, in one place, each with why it is what it is.
 */

/**
 * The stream-writes probe's write sizes: 1 B (an SSE event's smallest flush), 1 KB, 16 KB (where holding was first
 * reported) and 64 KB. The smallest that reaches the client at once is the padding the streams need on that stage
 * (`cdk deploy -c streamFlushPaddingBytes=N`, STREAM_FLUSH_PADDING_BYTES on the streaming functions; 0 by default).
 */
export const PROBE_SIZES: readonly number[] = [1, 1024, 16 * 1024, 64 * 1024];
/** The largest hold reported (100 KiB): the padding to deploy with when even 64 KB was held. */
export const REPORTED_HOLD_BYTES = 100 * 1024;
/**
 * How long the probe holds after its first write. Long enough that network jitter and a cold start (which delay the
 * first write and the end alike) cannot make a held write look prompt; short enough that the four probes, run side
 * by side, take a few seconds of Lambda time in all.
 */
export const PROBE_HOLD_MS = 2000;
/**
 * A write reached the client at once when the end came within this share of the hold after it: a held write arrives
 * with the end (a gap near 0), a prompt one a whole hold before it (a gap near PROBE_HOLD_MS).
 */
export const AT_ONCE_TOLERANCE = 1 / 4;
/**
 * Each open SSE stream or streamed execute keeps one Lambda execution busy for up to 15 minutes. Below 100 unreserved
 * concurrent executions (new accounts start at 10), a few dozen listeners leave no room for the webhook and the
 * engine's own functions, which Lambda then throttles (429 at the stage, retried steps in the state machine).
 */
export const MIN_UNRESERVED_CONCURRENCY = 100;
/** The smallest answer that shows a model serves the account: one word in, at most this many tokens out. */
export const MODEL_CHECK_MAX_TOKENS = 3;
/**
 * How long the alarms check waits for the Action item of the state change it made: CloudWatch runs an alarm's action
 * within seconds of the change, so a minute without one is a fault of its own. It reads the history every few seconds
 * meanwhile, far below DescribeAlarmHistory's quota.
 */
export const ALARM_ACTION_DEADLINE_MS = 60_000;
export const ALARM_HISTORY_POLL_MS = 2_000;
/** How far before its own clock the check reads the history from, should the machine's clock run ahead of AWS's. */
export const ALARM_CLOCK_SKEW_MS = 15 * 60_000;

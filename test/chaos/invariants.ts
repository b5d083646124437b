import type { FaultRecord } from './fault-tally.ts';
import { checkCallbacks } from './invariants-callbacks.ts';
import { checkEvents } from './invariants-events.ts';
import { checkExecutions } from './invariants-executions.ts';
import { checkRefusals } from './invariants-refusals.ts';
import { checkStreams } from './invariants-streams.ts';
import type { StoredState } from './stored-state.ts';
import type { TrafficRecord, TrafficSetup } from './traffic-record.ts';

/**
 * What must never happen, whatever failed underneath (Jepsen's way: break things, then check the history against
 * the rules). Each violation names its invariant and what broke it; test/chaos/README.md lists them.
 */
export type InvariantName =
  | 'answered'
  | 'acknowledged-stored-once'
  | 'handed-off-once'
  | 'run-ends'
  | 'decision-once'
  | 'decision-not-overtaken'
  | 'stop-honoured'
  | 'one-run-per-key'
  | 'callback-delivered'
  | 'stream-exactly-once'
  | 'lifecycle-events'
  | 'refusal-shape';

export interface Violation {
  invariant: InvariantName;
  detail: string;
}

export type Violate = (invariant: InvariantName, detail: string) => void;

/** An execution as GET /executions answered it after the traffic settled. */
export interface FinalView {
  status: string;
  output?: unknown;
  error?: string | null;
  [field: string]: unknown;
}

/** Each execution's final view (`undefined`: never read). */
export type FinalStatuses = Map<string, FinalView | undefined>;

export interface InvariantInput {
  record: TrafficRecord;
  setup: Pick<TrafficSetup, 'links' | 'callbacks'>;
  stored: StoredState;
  finals: FinalStatuses;
  /** Every fault the twin injected, in order (a repeat the product allows after a fault is bounded by them). */
  faults: readonly FaultRecord[];
}

export async function checkInvariants(input: InvariantInput): Promise<Violation[]> {
  const violations: Violation[] = [];
  const violate: Violate = (invariant, detail) => violations.push({ invariant, detail });
  await checkEvents(input, violate);
  checkExecutions(input, violate);
  checkCallbacks(input, violate);
  checkStreams(input, violate);
  for (const request of input.record.ledger.unanswered) violate('answered', `${request.label} ${new URL(request.url).pathname}: no answer`);
  checkRefusals(input.record.ledger.answers, violate);
  return violations;
}

import type { CallbackPlan } from './callback-plan.ts';
import type { CallbackReceiver } from './callback-receiver.ts';
import type { Ledger } from './client.ts';
import type { StreamedEvent } from './sse-reader.ts';

/** What the mix was given to send with, made once per data directory (traffic.ts, `prepareTraffic`). */
export interface TrafficSetup {
  /** Several keys, so that no key's rate limit (600 requests a minute) is what paces the mix. */
  keys: string[];
  /** Several links of each type, so one external_id can reach two sources, and no link's rate limit paces the mix. */
  links: LinkSetup[];
  recordings: { url: string; close(): Promise<void> };
  /** Completion callbacks, and the HTTP tool the tooled agent calls (its `/tool` path). */
  callbacks: CallbackReceiver;
  /** Where the twin appends each hand-off announcement (on AWS: an event on the stack's bus). */
  announcementsFile: string;
}

export interface LinkSetup {
  kind: 'calls' | 'dialogs';
  linkId: string;
  token: string;
  taskId: string;
  sourceId: string;
}

/** What the hand-off of an event must say, from what was sent (expected-conversation.ts). */
export interface ExpectedConversation {
  type: 'call' | 'text';
  external_id: string;
  link_id: string;
  source_id: string;
  source_channel: string | null;
  status: string | null;
  occurred_at: string;
  metadata: unknown;
  /** Dialogs: the digest of the messages as sent, in order (expected-conversation.ts, `messagesDigest`). */
  messages?: string;
  /** Calls: the recording the host served for the event's URL. */
  recording?: { sha256: string; bytes: number; format: string };
}

export interface AcknowledgedEvent {
  kind: 'calls' | 'dialogs';
  linkId: string;
  sourceId: string;
  externalId: string;
  eventId: string;
  expected: ExpectedConversation;
  /** The body as sent, kept for the events sent again as duplicates (small ones, and the last few large ones). */
  body?: string;
}

export type Workflow = 'echo' | 'gate' | 'agent' | 'tooled' | 'slow';
export type Decision = 'approve' | 'reject';

/** One decision sent on an execution, and how it was answered at last (undefined: never answered). */
interface DecisionSent {
  decision: Decision;
  status: number | undefined;
  /** Sent beside a stop, to race it. */
  racingStop: boolean;
}

/** Why a stop was sent, each with the answer the API promises (stop-invariants.ts). */
export type StopPurpose = 'streaming' | 'approval' | 'race' | 'ended';

interface StopSent {
  purpose: StopPurpose;
  status: number | undefined;
}

export interface StartedRun {
  executionId: string;
  workflow: Workflow;
  idempotencyKey: string;
  callback?: CallbackPlan & { tag: string };
  decisions: DecisionSent[];
  stops: StopSent[];
  /** The status the execute answered with. */
  answeredStatus?: string;
  /** The execution's lifecycle read after it settled (`/events?after=1`), for the runs a stop raced a decision on. */
  lifecycle?: StreamedEvent[];
}

export interface StreamRecord {
  workflow: Workflow;
  /** '' when no attempt ever opened the stream (each refused or dropped before an event). */
  executionId: string;
  ids: number[];
  /** The status of the `complete` the stream ended with. */
  completeStatus?: string;
  resumes: number;
  /** Every status the attempts were answered with (a dropped connection: 0). */
  statuses: number[];
  /** A resume answered 204 (the execution's log ended) before this client had read a `complete`. */
  endedBefore204?: boolean;
}

/** One subscription to `/executions/{id}/events`, resumed as often as it was cut. */
export interface SubscriptionRecord {
  executionId: string;
  events: StreamedEvent[];
  /** `final`: the server ended it after a final status; `left`: the client stopped reading; `cut`: attempts ran out. */
  ended: 'final' | 'left' | 'cut';
  resumes: number;
  /** Subscribed while the execution waited at its approval, before the decision was sent. */
  beforeDecision: boolean;
}

/** One collection sweep of some links' tasks: which announcements it may have written (the file's bytes), and when. */
interface SweepWindow {
  how: 'nightly' | 'manual';
  sourceIds: string[];
  fromByte: number;
  toByte: number;
  startedAt: number;
  endedAt: number;
}

export interface TrafficRecord {
  ledger: Ledger;
  /** Acknowledged events by `<source_id>/<external_id>`. */
  events: Map<string, AcknowledgedEvent>;
  /** external_id → every source it was sent to (answered or not). */
  sent: Map<string, Set<string>>;
  /** Acknowledged duplicates: the event id a duplicate was answered with, beside the one its first send got. */
  duplicates: { key: string; answered: string; first: string }[];
  runs: Map<string, StartedRun>;
  /** Idempotency-Key → every execution id an answer named for it (execute bodies, streams' X-Execution-Id). */
  keyAnswers: Map<string, Set<string>>;
  streams: StreamRecord[];
  subscriptions: SubscriptionRecord[];
  sweeps: SweepWindow[];
  /** How many of each kind of request the mix sent (traffic.ts names them). */
  kinds: Record<string, number>;
  collections: number;
  requests: number;
}

export function newTrafficRecord(ledger: Ledger): TrafficRecord {
  return {
    ledger,
    events: new Map(),
    sent: new Map(),
    duplicates: [],
    runs: new Map(),
    keyAnswers: new Map(),
    streams: [],
    subscriptions: [],
    sweeps: [],
    kinds: {},
    collections: 0,
    requests: 0,
  };
}

export const eventKey = (sourceId: string, externalId: string) => `${sourceId}/${externalId}`;

export function noteKind(record: TrafficRecord, kind: string): void {
  record.kinds[kind] = (record.kinds[kind] ?? 0) + 1;
}

export function noteKeyAnswer(record: TrafficRecord, key: string, executionId: string): void {
  const seen = record.keyAnswers.get(key) ?? new Set<string>();
  seen.add(executionId);
  record.keyAnswers.set(key, seen);
}

/**
 * The kinds of receiver an execution's callback may meet (callback-receiver.ts answers as each says), and the secret it
 * is signed with. Apart from the receiver itself, so the invariants load no server.
 */
export type CallbackBehaviour =
  /** answers 204 */
  | 'accept'
  /** 503 twice, then 204 */
  | 'fail-twice'
  /** 500 every time: the ladder runs out and the callback is given up */
  | 'always-fail'
  /** 204 after 2 s, well inside the sender's timeout */
  | 'slow'
  /** the first attempt outlasts the sender's 10 s timeout (it gives up on it), then 204 */
  | 'late'
  /** 307 to another path every time, which must never be followed */
  | 'redirect'
  /** the first attempt's connection is reset once its body arrived, then 204 */
  | 'reset-once';

/** Behaviours that end with the callback taken; the others end with it given up. */
export const TAKEN_IN_THE_END: ReadonlySet<CallbackBehaviour> = new Set(['accept', 'fail-twice', 'slow', 'late', 'reset-once']);

export interface CallbackPlan {
  behaviour: CallbackBehaviour;
  /** The execution's `webhook_secret` (a `whsec_` one is base64 per Standard Webhooks); none: unsigned. */
  secret?: string;
}

/**
 * Every limit of the product, named after the specs' own words.
 * Inbound Conversation Webhook API, section 8, unless a comment says otherwise.
 */

export const MiB = 1024 * 1024;
const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

export const MAX_REQUEST_BODY_BYTES = 1 * MiB;
export const BODY_TRANSFER_TIMEOUT_MS = 30 * SECOND_MS;
export const MAX_MESSAGES_PER_DIALOG = 2000;
export const MAX_REQUESTS_PER_MINUTE_PER_LINK = 600;
export const MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK = 100_000;
export const EXTERNAL_ID_PATTERN = /^[A-Za-z0-9._:-]{1,255}$/;
export const MAX_SOURCE_CHANNEL_LENGTH = 64;
export const MAX_STATUS_LENGTH = 32;
export const MAX_AUDIO_URL_LENGTH = 2048;
export const AUDIO_FORMAT_PATTERN = /^[a-z0-9]{1,8}$/;
export const MAX_INT32 = 2_147_483_647;
export const OCCURRED_AT_MAX_AGE_YEARS = 1;
export const OCCURRED_AT_MAX_FUTURE_MS = 1 * DAY_MS;
export const QUEUE_RETENTION_MS = 30 * DAY_MS;
export const MAX_DELIVERY_FAILURES_PER_EVENT = 5;
export const LINK_REISSUE_GRACE_MS = 24 * HOUR_MS;

/** Spec 2, Metadata: the source schema is built from the last 100 accepted events. */
export const METADATA_SCHEMA_SAMPLE_EVENTS = 100;

/*
 * Limits the spec leaves to us. Chosen so that a sender following the spec never meets them.
 */

/** Token guessing: unknown tokens per client IP per window before the IP gets 429 for the rest of the window. */
export const MAX_UNKNOWN_TOKENS_PER_IP = 20;
export const UNKNOWN_TOKEN_WINDOW_MS = 10 * MINUTE_MS;

/** Metadata keys remembered per event for the schema; keeps the index entry small whatever the sender puts in. */
export const MAX_METADATA_SCHEMA_KEYS_PER_EVENT = 200;
export const MAX_METADATA_SCHEMA_KEY_LENGTH = 128;

/** Distinct values remembered per collection filter (Channel, Direction) of a source. */
export const MAX_FILTER_VALUES_PER_SOURCE = 500;
export const MAX_FILTER_VALUE_LENGTH = 64;

/**
 * A compressed body up to this size is kept inside the DynamoDB item; a larger one goes to S3.
 * Cost, not capacity, decides: an on-demand write costs one unit per KB, so past about 8 KB an
 * S3 PUT (one request whatever the size) is cheaper; 16 KB keeps typical dialogs in one round trip.
 */
export const INLINE_BODY_MAX_BYTES = 16 * 1024;

/** event_id blocks: one counter write per this many ids per running function instance. */
export const EVENT_ID_BLOCK_SIZE = 1000;

/*
 * Published Workflow API. The spec (section 8) fixes only the rotation grace; the rest are ours.
 */

/** Spec 8: the old key keeps working this long after a rotation. */
export const API_KEY_ROTATION_GRACE_MS = 24 * HOUR_MS;
/** Requests per key per minute, all endpoints together; a backstop against a runaway client, well above a chat bot's pace. */
export const MAX_REQUESTS_PER_MINUTE_PER_KEY = 600;
/** Bodies of the published API (execute, approve, reject); the run context travels in the Step Functions input, capped at 256 KB. */
export const MAX_EXECUTE_BODY_BYTES = 128 * 1024;
/** Feedback of approve/reject, and every id a caller names (user_id, thread_id). */
export const MAX_FEEDBACK_LENGTH = 10_000;
export const MAX_CALLER_ID_LENGTH = 256;
/**
 * How long a blocking execute waits before answering 202 with the running execution to poll.
 * On AWS the execute route uses response streaming (15 min integration timeout); a minute of margin stays for the answer.
 */
export const MAX_BLOCKING_EXECUTE_MS = 14 * MINUTE_MS;
/** First and longest pause between status reads of a blocking execute: fast answers for short runs, few reads for long ones. */
export const EXECUTE_POLL_FIRST_MS = 50;
export const EXECUTE_POLL_MAX_MS = 1000;
/** An approval nobody answers fails the run after this long: AwaitApproval's TimeoutSeconds in the ASL file (a test keeps them equal). */
export const APPROVAL_TIMEOUT_SECONDS = 7 * 24 * 60 * 60;
/** Executions and their events are kept this long after they start. */
export const EXECUTION_RETENTION_MS = 90 * DAY_MS;
/** Conversation turns are kept this long after they are written; user memory has no expiry. */
export const HISTORY_RETENTION_MS = 90 * DAY_MS;
/** `{{history}}` renders at most this many of the thread's latest earlier turns. */
export const MAX_HISTORY_TURNS = 50;
/** Executed nodes per run: a condition loop without an exit fails the run instead of running forever. */
export const MAX_STEPS_PER_RUN = 1000;
/** `wait` nodes: the longest single pause (Step Functions allows a year; a day keeps runs observable). */
export const MAX_WAIT_SECONDS = 24 * 60 * 60;
/** `scripted` llm nodes: delay between emitted tokens. */
export const MAX_TOKEN_DELAY_MS = 5000;
/** Workflows per publication and nodes per workflow; bounds the definition item (400 KB) and the editor's sanity. */
export const MAX_WORKFLOWS_PER_PUBLICATION = 200;
export const MAX_NODES_PER_WORKFLOW = 200;
/** Callbacks: each attempt's deadline. Retries and their backoff are the ASL file's Retry on DeliverCallback. */
export const CALLBACK_ATTEMPT_TIMEOUT_MS = 10 * SECOND_MS;

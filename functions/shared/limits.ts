import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from './time.ts';

/**
 * Every limit of the product, named after the words of the APIs' contracts. A limit is the Inbound Conversation
 * Webhook API's, as its OpenAPI document and functions/inbound/README.md#the-contract-in-brief state it, unless a
 * comment says otherwise.
 */

const MiB = 1024 * 1024;

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
export const LINK_REISSUE_GRACE_MS = 24 * HOUR_MS;

/** A source's metadata schema (`links schema`, lib/admin/README.md) is built from its last 100 accepted events. */
export const METADATA_SCHEMA_SAMPLE_EVENTS = 100;

/*
 * Limits the webhook API's contract leaves to the product. Chosen so that a sender keeping to the contract never
 * meets them.
 */

/** Token guessing: unknown tokens per client IP per window before the IP gets 429 for the rest of the window. */
export const MAX_UNKNOWN_TOKENS_PER_IP = 20;
export const UNKNOWN_TOKEN_WINDOW_MS = 10 * MINUTE_MS;
/**
 * How long a webhook function keeps a bound link it has read (token → link) in memory, so a busy link costs no read
 * per request. A revocation, or the end of an old token's grace after a reissue, reaches a warm function within it.
 */
export const LINK_CACHE_MS = 1000;
/** Links kept per function instance; the oldest go first. */
export const LINK_CACHE_ENTRIES = 10_000;

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
 * Published Workflow API. Its contract (functions/published/README.md#the-contract-in-brief) fixes only the rotation
 * grace; the rest are ours.
 */

/** The contract's grace: the old key keeps working this long after a rotation. */
export const API_KEY_ROTATION_GRACE_MS = 24 * HOUR_MS;
/** Requests per key per minute, all endpoints together; a backstop against a runaway client, well above a chat bot's pace. */
export const MAX_REQUESTS_PER_MINUTE_PER_KEY = 600;
/**
 * Bodies of the published API (execute, approve, reject); the execution context is stored with the execution, never in the Step Functions
 * state.
 */
export const MAX_EXECUTE_BODY_BYTES = 128 * 1024;
/**
 * Nesting (objects and arrays) of a published API body and of a webhook event's metadata. An execution writes its input and
 * memory values as JSON, and the collection its metadata; JSON.stringify recurses, and near 18,000 levels (a 36 KB
 * body) overflows the stack: a 500 or 503 the caller could never retry past, or an acknowledged event never handed on.
 * Real inputs nest a handful of levels.
 */
export const MAX_JSON_DEPTH = 64;
/** Feedback of approve/reject, and every id a caller names (user_id, thread_id). */
export const MAX_FEEDBACK_LENGTH = 10_000;
export const MAX_CALLER_ID_LENGTH = 256;
/**
 * How long a blocking execute waits before it ends its document with the still running execution and its poll URL.
 * On AWS the execute route uses response streaming (15 min integration timeout); a minute of margin stays for the answer.
 */
export const MAX_BLOCKING_EXECUTE_MS = 14 * MINUTE_MS;
/**
 * A blocking execute sends JSON whitespace this often while it waits (a single space, or STREAM_FLUSH_PADDING_BYTES of
 * it where a deployment sets padding), for the same proxies and the same reasons as the SSE heartbeat
 * (STREAM_HEARTBEAT_INTERVAL_MS, below).
 */
export const EXECUTE_HEARTBEAT_INTERVAL_MS = 25 * SECOND_MS;
/**
 * Pauses between status reads of a blocking execute (functions/executions/settle-polling.ts): the first read comes
 * when recent runs of the workflow settled (FIRST until a function instance has seen a few), later pauses grow by
 * GROWTH from at least MIN to at most MAX: quick runs are answered soon after they settle, a long one costs a read a second.
 */
export const EXECUTE_POLL_FIRST_MS = 10;
export const EXECUTE_POLL_MIN_MS = 2;
export const EXECUTE_POLL_GROWTH = 1.5;
export const EXECUTE_POLL_MAX_MS = 1000;
/** Recent executions per workflow the first read is timed from, and workflows a function instance keeps them for. */
export const EXECUTE_POLL_HISTORY_EXECUTIONS = 8;
export const EXECUTE_POLL_HISTORY_WORKFLOWS = 200;
/**
 * What a function instance keeps in memory for the hours it may live, the least recently used going first: published
 * workflows and publications' listings (their items never change; each cache holds at most CACHED_DEFINITION_BYTES of
 * stored definitions), compiled `condition` expressions, compiled tool argument schemas.
 */
export const CACHED_WORKFLOWS = 1000;
export const CACHED_PUBLICATIONS = 50;
export const CACHED_DEFINITION_BYTES = 16 * 1024 * 1024;
export const CACHED_CONDITIONS = 500;
export const CACHED_TOOL_SCHEMAS = 500;
/**
 * `Idempotency-Key` on execute and stream: 1-255 printable ASCII characters (space to tilde), as most clients and
 * the IETF draft's examples send them (a UUID, a ULID); a key is a partition key part, far under DynamoDB's 2,048 bytes.
 */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
export const IDEMPOTENCY_KEY_PATTERN = new RegExp(`^[\\x20-\\x7E]{1,${MAX_IDEMPOTENCY_KEY_LENGTH}}$`);
/** A key names the same execution this long after the first request that used it; then it is free again. */
export const IDEMPOTENCY_KEY_RETENTION_MS = 24 * HOUR_MS;
/**
 * A repeated request waits this long for the first request with its key to start the execution (normally a few round
 * trips), reading the key with pauses growing by half from FIRST to MAX; past it the answer is 503 (retry later). It
 * outlasts IDEMPOTENT_START_LEASE_MS, so a request that finds the key held waits until its start is done or its lease has
 * passed, and then finishes that start itself (normally well under a second).
 */
export const IDEMPOTENT_START_WAIT_MS = 20 * SECOND_MS;
export const IDEMPOTENT_START_POLL_FIRST_MS = 20;
export const IDEMPOTENT_START_POLL_MAX_MS = 500;
/**
 * The lease on an Idempotency-Key for the start of its execution (`starting_until_ms` on the key): past it, a retry of the same
 * request takes the key over and finishes that start. It is sized to the start, not to the invocation (up to 15 minutes
 * on the streaming route), so a retry after a crash gets its execution within seconds. Its holder drives the start for the
 * first 10 s of it (the rest is IDEMPOTENT_START_LEASE_MARGIN_MS): the start is five round trips one after another (the
 * publication read, the execution's writes side by side, `launching`, StartExecution, `started`), tens of milliseconds each;
 * the clients make 3 attempts in the standard retry mode (hot-path.ts), and a call throttled on all three waits at most
 * about 3 s between them (full jitter under a 1 s base, doubled), so 10 s hold three such calls. A start slower than that
 * (connections timing out, 3 s an attempt) stops with 503, the key left as it is, and its retry finishes it.
 */
export const IDEMPOTENT_START_LEASE_MS = 15 * SECOND_MS;
/**
 * The end of the lease its holder keeps clear: it sends nothing for the start in it, so a call it sent just before has
 * landed (one round trip, or a throttled call's attempts and their backoff, about 3 s) before another request can take
 * the key over and write the same execution again. The lease also never ends later than its invocation's deadline plus this
 * margin: Lambda stops an invocation at its timeout, so nothing of it is sent after that.
 */
export const IDEMPOTENT_START_LEASE_MARGIN_MS = 5 * SECOND_MS;
/**
 * The lease on an approval claimed by a decision (`approval_lease_until` on the execution): past it, the next decision
 * takes the claim over and sends itself. It outlasts the send (the clients' 3 attempts, about 3 s when throttled), so a
 * live decision is not taken over, and is short enough that a caller retrying after a lost answer is served in seconds.
 */
export const APPROVAL_DECISION_LEASE_MS = 15 * SECOND_MS;
/** How long a decision waits for another's live claim to land or be given back before answering 503. */
export const APPROVAL_CLAIM_WAIT_MS = 2 * SECOND_MS;
/**
 * The lease a delivered decision keeps on its execution until the execution's step takes it up (its event in the log, see
 * executions/approval-decision.ts); a stop meanwhile answers 409. It outlasts RunStep's retries of a throttled step (8
 * attempts, at most 121 s of backoff in the ASL file), and passes by itself if the step never comes.
 */
export const APPROVAL_TAKE_UP_MS = 5 * MINUTE_MS;
/**
 * How long an execution whose step found it cancelled waits before its state machine execution ends, so that the stop's
 * StopExecution, sent after its record write within the stop's invocation (29 s at most: routes.ts), ends it ABORTED
 * and never SUCCEEDED: the AwaitStop state's Seconds in the ASL file (a test keeps them equal).
 */
export const STOP_ARRIVAL_WAIT_SECONDS = 30;
/**
 * How long a decision that found its task token gone tells the caller to wait: a retried AwaitApproval records its new
 * token after its retry's backoff (at most 2 s for the first retry in the ASL file) and one invocation.
 */
export const APPROVAL_REISSUE_WAIT_MS = 5 * SECOND_MS;
/**
 * An approval nobody answers fails the execution after this long: AwaitApproval's TimeoutSeconds in the ASL file (a test keeps them equal).
 */
export const APPROVAL_TIMEOUT_SECONDS = 7 * 24 * 60 * 60;
/** Executions and their events are kept this long after they start. */
export const EXECUTION_RETENTION_MS = 90 * DAY_MS;
/** Conversation turns are kept this long after they are written; user memory has no expiry. */
export const HISTORY_RETENTION_MS = 90 * DAY_MS;
/** `{{history}}` renders at most this many of the thread's latest earlier turns. */
export const MAX_HISTORY_TURNS = 50;
/** Executed nodes per execution: a condition loop without an exit fails the execution instead of running forever. */
export const MAX_STEPS_PER_EXECUTION = 1000;
/** `wait` nodes: the longest single pause (Step Functions allows a year; a day keeps runs observable). */
export const MAX_WAIT_SECONDS = 24 * 60 * 60;
/** `scripted` llm nodes: delay between emitted tokens. */
export const MAX_TOKEN_DELAY_MS = 5000;
/** Workflows per publication and nodes per workflow; bounds the definition item (400 KB) and the editor's sanity. */
export const MAX_WORKFLOWS_PER_PUBLICATION = 200;
export const MAX_NODES_PER_WORKFLOW = 200;
/** Callbacks: each attempt's deadline. Retries and their backoff are the ASL file's Retry on DeliverCallback. */
export const CALLBACK_ATTEMPT_TIMEOUT_MS = 10 * SECOND_MS;

/*
 * DynamoDB's own limits, and ours that keep every item and key under them for any input the APIs accept.
 */

/** Workflow ids (and node ids) of definitions; a path id that cannot be one answers 404 before any read. */
export const WORKFLOW_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Execution ids are made by the service (UUIDs, or `newId`'s base64url); anything else answers 404 before any read. */
export const EXECUTION_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Project ids, named by the operator (`--project`); part of partition keys. */
export const PROJECT_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
/**
 * A memory key is a sort key (`key#<name>`, at most 1,024 bytes); 256 bytes of UTF-8 keeps far below it
 * and is what `initial_memory` and the `set` of memory nodes accept.
 */
export const MAX_MEMORY_KEY_BYTES = 256;
/**
 * A workflow definition as stored (compact JSON). DynamoDB items stop at 400 KB, names and the item's
 * other attributes (keys, publication id, timestamps: under 1 KB) included; 256 KB leaves ample room.
 */
export const MAX_DEFINITION_BYTES = 256 * 1024;
/**
 * BatchGet/BatchWrite leave items unprocessed under throttling: they are sent again after an exponential,
 * fully jittered pause (base × 2^attempt, capped), at most this many attempts in all; then the request
 * answers 503. Worst case about 1.5 s of pauses, well inside an API request's time.
 */
export const BATCH_MAX_ATTEMPTS = 6;
export const BATCH_RETRY_BASE_MS = 50;
export const BATCH_RETRY_MAX_DELAY_MS = 1 * SECOND_MS;

/*
 * Run state (helper run-state). Step Functions carries at most 256 KiB per state, so an execution's state machine
 * state holds ids and a small cursor; the execution's context, node outputs, results and long turns live in the
 * executions table, and in S3 (`executions/<id>/...`) past the threshold below.
 */

/**
 * An execution value (execution context, node outputs, output, error, approval message, history turn) up to this many
 * bytes of JSON stays inside its DynamoDB item; a larger one goes to S3 with a pointer in the item.
 * Cost decides, as for webhook bodies: an on-demand write is one unit per KB, a read half a unit per 4 KB,
 * an S3 PUT costs about as much as 8 write units and a GET about as much as 3 read units, whatever the size;
 * past roughly 10 KB S3 is cheaper, and 16 KB keeps typical values in one round trip.
 */
export const EXECUTION_VALUE_INLINE_MAX_BYTES = 16 * 1024;
/**
 * An execution's output (or approval message) as JSON. GET /executions answers through a buffered Lambda
 * response (6 MB), where the JSON body is escaped once more (at worst twice its size): 2.5 MiB always fits.
 * A longer error text is cut to this size.
 */
export const MAX_EXECUTION_RESULT_BYTES = 2.5 * MiB;
/**
 * One user-memory value as JSON. Every step that reads memory reads all of the user's values, so they stay
 * small items; any `initial_memory` value fits (the body is at most 128 KB), a memory node setting more fails the execution.
 * @alias of MAX_EXECUTE_BODY_BYTES, by design.
 */
export const MAX_MEMORY_VALUE_BYTES = MAX_EXECUTE_BODY_BYTES;
/**
 * Caller ids (`user_id`, `thread_id`) inside partition keys: percent-encoded when that stays within this
 * many bytes, else replaced by their SHA-256, so `thread#<project>#<user>#<thread>` stays under DynamoDB's 2,048 bytes.
 */
export const MAX_INLINE_KEY_PART_BYTES = 512;

/*
 * Stream event streams (`/stream`, `/executions/{id}/stream`, `/executions/{id}/events`).
 */

/** The step function writes buffered events at most this often while a model generates: writes grow with time, not tokens. */
export const STREAM_EVENT_FLUSH_INTERVAL_MS = 100;
/** A batch body from this size is gzip-compressed: one write unit per KB stored, and token JSON compresses well. */
export const STREAM_EVENT_BATCH_GZIP_FROM_BYTES = 1024;
/** A batch body beyond this goes to part items (DynamoDB items stop at 400 KB, names and keys included). */
export const STREAM_EVENT_ITEM_BODY_MAX_BYTES = 256 * 1024;
/**
 * A comment line goes out after this long without an event, so that nothing between the caller and API Gateway takes
 * the stream for dead. API Gateway itself waits 5 minutes (REST response streaming, REGIONAL endpoint); the proxies
 * callers commonly sit behind give up sooner: CloudFront's origin response timeout (30 s by default, also between two
 * packets of a response), Heroku's router (55 s), nginx's `proxy_read_timeout` (60 s by default) and an AWS
 * Application Load Balancer's idle timeout (60 s by default). 25 s is under the strictest of them, with room for a
 * timer that fires late on a busy function. A heartbeat is 14 bytes (`: keep-alive` and two line ends), so with the
 * default of no padding a silent stream sends about 34 bytes a minute.
 */
export const STREAM_HEARTBEAT_INTERVAL_MS = 25 * SECOND_MS;
/**
 * Filler after what must reach the client now (a heartbeat, the last events of a burst, the first bytes that carry the
 * status) is a deployment setting, `STREAM_FLUSH_PADDING_BYTES` (`cdk deploy -c streamFlushPaddingBytes=N`), 0 by
 * default: nothing measured says API Gateway's REST response streaming holds small writes. Lambda has been reported
 * to hold a small streamed write until more bytes follow (from about 15 KB up to 100 KB, all through Function URLs,
 * none measured on a REST stage); `admin verify` measures a deployed stage and recommends the padding it needs. It is
 * at most this much: the stream probe's largest write, above the largest hold reported.
 */
export const STREAM_FLUSH_PADDING_MAX_BYTES = 256 * 1024;
/**
 * With padding set, filler after events is paced (a heartbeat's is not: heartbeats are 25 s apart). The first
 * STREAM_FLUSH_BURST bursts of events get theirs at once, then one burst per STREAM_FLUSH_REFILL_MS for every
 * STREAM_FLUSH_REFILL_BYTES of padding does (1 s at 100 KiB or less, 2.56 s at the largest, 256 KiB), and the events
 * in between wait for it (only if Lambda holds by size rather than until the next write). Unpaced, a generating
 * model's ten bursts a second would stream 1 MB/s of 100 KiB filler and reach Lambda's 200 MB response limit in about
 * three minutes; paced, filler averages at most 100 KiB a second, and a 14-minute stream stays under 100 MB with any
 * padding (computed: 845 bursts of 100 KiB, or 333 of 256 KiB, plus 34 heartbeats' filler).
 */
export const STREAM_FLUSH_BURST = 5;
export const STREAM_FLUSH_REFILL_MS = 1 * SECOND_MS;
export const STREAM_FLUSH_REFILL_BYTES = 100 * 1024;
/**
 * A stream whose reader takes nothing for this long while events wait ends with a `resume` event (reason
 * `slow_reader`). Until then the function writes no filler or heartbeat and reads nothing more from the execution's log, so
 * a slow reader costs at most one read of the log in memory, never a growing backlog. A healthy reader never meets it:
 * a mobile hand-over, a long GC pause or TCP's retransmission backoff after a short loss (1 + 2 + 4 + 8 s) stall a
 * connection for seconds, not half a minute. A reader that far behind does better to reconnect with `Last-Event-ID`
 * (the log keeps every event), and the function stops paying for a connection that moves nothing.
 */
export const STREAM_SLOW_READER_MS = 30 * SECOND_MS;
/**
 * The longest stream window a deployment may set: API Gateway's integration timeout for streamed responses, and the
 * function's, is 15 minutes, and a minute stays for the `resume` notice and the invocation's own end.
 */
export const MAX_STREAM_MS = 14 * MINUTE_MS;
/**
 * The stream window: the longest one invocation serves a stream before it ends it with a `resume` event (and an SSE
 * `retry:` hint) naming where to continue. Lambda does not stop a streaming function whose caller left (it is billed
 * to its end), so an abandoned stream costs one window, at most: at 5 minutes, 75 GB-s of a 256 MB function
 * ($0.0010) and its tail's reads, and its slot of the key's and the deployment's open streams is held that long.
 * A reader that stays pays one reconnection a window (a request, a cold start at worst, a few store requests: about
 * $0.00001), 12 an hour, about 1 % of what the hour of streaming costs in Lambda time. A deployment setting
 * (`cdk deploy -c streamWindowSeconds=N`, STREAM_WINDOW_SECONDS), from a minute to MAX_STREAM_MS.
 */
export const DEFAULT_STREAM_WINDOW_MS = 5 * MINUTE_MS;
export const MIN_STREAM_WINDOW_MS = 1 * MINUTE_MS;
/**
 * Time kept back from the invocation's own deadline to write the `resume` notice and end the response; an open
 * stream's lease outlasts its window by as much, so it ends no sooner than the invocation can.
 */
export const STREAM_END_MARGIN_MS = 5 * SECOND_MS;
/**
 * The SSE `retry:` hint sent with a `resume` event: EventSource reconnects (with Last-Event-ID) after this long, rather
 * than after its own default of a few seconds. A window's end is planned, so the reader comes back at once.
 */
export const STREAM_RESUME_RETRY_MS = 1 * SECOND_MS;
/**
 * Open streams (functions/published/README.md, Open streams). A key holds at most its `max_open_streams` at once
 * (`keys create --max-open-streams N`), DEFAULT_MAX_OPEN_STREAMS_PER_KEY unless set: a server that multiplexes its users
 * over one key opens one stream per execution it shows (its users watching the same execution share it), so 100 covers
 * a hundred executions watched at once, and one key, however it misbehaves, holds a fifth of the deployment's streams.
 */
export const DEFAULT_MAX_OPEN_STREAMS_PER_KEY = 100;
/**
 * The deployment's open streams, all keys together: each holds one unit of the account's Lambda concurrency, which
 * ingest, the engine and the collection share. Half of the default account quota (1,000) by default, leaving 500 for
 * the rest; a deployment setting (`cdk deploy -c maxOpenStreams=N`, MAX_OPEN_STREAMS), which `admin verify` reports
 * against the account's unreserved concurrency. At most MAX_OPEN_STREAMS_LIMIT, for a key's limit too: each opening
 * reads its scope's live leases, and 10,000 of them are about 1 MB (one Query page); beyond that streams need a
 * fan-out tier (functions/published/README.md, 10,000 watchers).
 */
export const DEFAULT_MAX_OPEN_STREAMS = 500;
export const MAX_OPEN_STREAMS_LIMIT = 10_000;
/**
 * Taking a slot: each round reads the scope's live leases and tries up to OPEN_STREAM_SLOT_TRIES free slots, drawn at
 * random, with a conditional write each; a slot another stream took meanwhile fails its write. After
 * OPEN_STREAM_SLOT_ROUNDS rounds the answer is 503 (a burst of openings in the same moment): a handful of store requests.
 */
export const OPEN_STREAM_SLOT_ROUNDS = 3;
export const OPEN_STREAM_SLOT_TRIES = 3;
/**
 * Reads of the log while tailing (functions/executions/tail-pace.ts): 40 ms after new events, then each pause half as
 * long again while nothing comes, up to a bound that grows with the silence: the larger of STREAM_POLL_MAX_MS (so a
 * model's first tokens, a second or two off, are seen within a quarter second) and an eighth of the silence so far,
 * never more than STREAM_POLL_IDLE_MAX_MS. A stream that went quiet for a minute reads every 5 s, not 4 times a second:
 * a strongly consistent Query is one read unit, and a tail at 250 ms reads 240 times a minute (an abandoned stream
 * 3,364 times in 14 minutes).
 */
export const STREAM_POLL_FIRST_MS = 40;
export const STREAM_POLL_GROWTH = 1.5;
export const STREAM_POLL_MAX_MS = 250;
export const STREAM_POLL_IDLE_SHARE = 8;
export const STREAM_POLL_IDLE_MAX_MS = 5 * SECOND_MS;
/**
 * While the execution waits (a wait node, an approval) nothing comes until it resumes: the bound starts at 5 s and
 * grows the same way to 30 s, so a decision taken after a minute of waiting is seen within 8 s, one after ten minutes
 * within 30 s.
 */
export const STREAM_POLL_WAITING_MAX_MS = 5 * SECOND_MS;
export const STREAM_POLL_WAITING_IDLE_MAX_MS = 30 * SECOND_MS;
/**
 * The stream probe (`GET /diagnostics/stream-probe?bytes=N&hold_ms=M`), which writes N bytes unpadded and holds M ms
 * so an operator can see whether a write of that size reaches the client before the response ends. N is 1 to 256 KiB:
 * the largest padding a deployment may set (STREAM_FLUSH_PADDING_MAX_BYTES), above the largest hold reported (100 KiB).
 * M is 0 to 10 s: it bounds the Lambda time a probe bills (one invocation for up to M), and is ample to tell a write
 * that arrives at once from one held until the end.
 */
export const STREAM_PROBE_MIN_BYTES = 1;
/** @alias of STREAM_FLUSH_PADDING_MAX_BYTES, by design. */
export const STREAM_PROBE_MAX_BYTES = STREAM_FLUSH_PADDING_MAX_BYTES;
export const STREAM_PROBE_DEFAULT_BYTES = 1;
export const STREAM_PROBE_MAX_HOLD_MS = 10 * SECOND_MS;
export const STREAM_PROBE_DEFAULT_HOLD_MS = 2 * SECOND_MS;
/**
 * The probe's own time limit (its function's timeout and its integration's), not the 15 minutes of the product's
 * streams: the longest hold plus a margin for the rest of the invocation (the key's lookup and count, one write, the
 * usage record: a few DynamoDB requests, with their retries). A probe that hangs then bills seconds, not a quarter hour.
 */
export const STREAM_PROBE_MARGIN_MS = 10 * SECOND_MS;
export const STREAM_PROBE_TIMEOUT_SECONDS = (STREAM_PROBE_MAX_HOLD_MS + STREAM_PROBE_MARGIN_MS) / SECOND_MS;

/*
 * Nightly collection (functions/collection/README.md#nightly-collection).
 */

/** An event whose recording failed this many times in all is abandoned: never fetched or handed off again. */
export const MAX_DELIVERY_FAILURES_PER_EVENT = 5;
/** Tries per event within one sweep (each failure counts), the pause between them, then the following nights. */
export const COLLECTION_ATTEMPTS_PER_SWEEP = 2;
export const COLLECTION_RETRY_PAUSE_MS = 1 * SECOND_MS;
/** Index items read per page; the sweep's checkpoint moves after each page. */
export const COLLECTION_PAGE_SIZE = 200;
/** Events (recordings) fetched at once: bounded so memory and the sender's server stay calm. */
export const COLLECTION_CONCURRENCY = 8;
/**
 * Each recording streams into a multipart upload (@aws-sdk/lib-storage) whose buffers live outside the V8 heap: per
 * recording up to QUEUE_SIZE parts being sent, the part being gathered, and its copy while Buffer.concat joins it,
 * (QUEUE_SIZE + 2) x PART_BYTES = 15 MiB (lib-storage's default queue of 4: 30 MiB). On AWS the TLS layer also holds
 * an encrypted copy of each part being sent. Parts are S3's minimum size (but for the last); with one at a time a
 * recording's download waits while its part goes out, a pause that S3 within the region keeps short next to a
 * sender's transfer, and the price of fitting eight transfers into COLLECT_BATCH_MEMORY_MB.
 */
export const RECORDING_UPLOAD_PART_BYTES = 5 * 1024 * 1024;
export const RECORDING_UPLOAD_QUEUE_SIZE = 1;
/**
 * CollectBatch's memory size (MB), from the peak measured with COLLECTION_CONCURRENCY recordings of 50 MiB at once
 * (`BENCH_ONLY=collection BENCH_COLLECTION=memory npm run bench`): 228-251 MiB as the twin counts it, 285-299 MiB
 * resident (VmHWM) for the deployed bundle in a process of its own with S3 over TLS. That leaves about 40% of 512 for
 * what neither sees (Lambda's runtime client, a GC that comes later). lib-storage's default queue of 4 peaks at
 * 313 MiB counted and 446 MiB resident: at 256 MB it dies with Runtime.OutOfMemory. Lambda bills GB-seconds: per
 * recording in flight, 512 MB for 8 costs what 256 MB for 4 would, at twice the throughput.
 */
export const COLLECT_BATCH_MEMORY_MB = 512;
/** One recording transfer, whole (connect to last byte). */
export const RECORDING_TRANSFER_TIMEOUT_MS = 120 * SECOND_MS;
/**
 * The longest one event's collection may take once started: every try's transfer timing out, the pauses between,
 * and a margin for its reads and writes. A CollectBatch invocation starts no event later than this before its
 * timeout, so it never times out inside a page (a timed-out batch would be retried on the same events).
 */
export const COLLECTION_EVENT_MAX_MS =
  COLLECTION_ATTEMPTS_PER_SWEEP * RECORDING_TRANSFER_TIMEOUT_MS +
  (COLLECTION_ATTEMPTS_PER_SWEEP - 1) * COLLECTION_RETRY_PAUSE_MS +
  30 * SECOND_MS;
/** A claim older than this belongs to a sweep that died (a transfer takes at most 2 minutes, twice). */
export const COLLECTION_CLAIM_LEASE_MS = 15 * MINUTE_MS;
/** Recordings and hand-off documents in the bucket (lifecycle rules on `recordings/` and `handoff/`). */
export const HANDOFF_RETENTION_MS = 90 * DAY_MS;
/**
 * Hand-offs the operator's `handoffs` listing reads at once. A conversation stored can be about a megabyte (a dialog
 * sent in a 1 MiB body), so the listing holds about this many megabytes whatever the link's count.
 */
export const HANDOFF_READS_IN_FLIGHT = 8;
/** Sweep checkpoints are kept this long (the operator's `tasks list` shows each task's last sweep). */
export const COLLECTION_SWEEP_RETENTION_MS = 90 * DAY_MS;

/*
 * Agents (tools, hand-offs).
 */

/** Model turns of one agent node, hand-offs included, unless the node says fewer. */
export const DEFAULT_AGENT_TURNS = 8;
export const MAX_AGENT_TURNS = 50;
/** Tool calls one turn of a scripted agent's script may make. */
export const MAX_SCRIPTED_TOOL_CALLS_PER_TURN = 16;
/** An HTTP tool call, whole; a tool may ask for less. */
export const DEFAULT_TOOL_TIMEOUT_MS = 10 * SECOND_MS;
export const MAX_TOOL_TIMEOUT_MS = 60 * SECOND_MS;
/** A tool result enters the model's context (and the agent's scope) cut to this many bytes of text. */
export const MAX_TOOL_RESULT_BYTES = 64 * 1024;
/** The result or error text a `tool_call` event carries. */
export const MAX_TOOL_EVENT_RESULT_BYTES = 2 * 1024;
/** Tools one MCP server entry may expose to an agent (its allow-list). */
export const MAX_MCP_TOOLS_PER_SERVER = 32;
/** Converse's tool names: 1-64 of `[a-zA-Z0-9_-]` (a hand-off's `transfer_to_<node>` included). */
export const CONVERSE_TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
export const CONVERSE_TOOL_NAME_MAX = 64;
/** Secret values are SSM SecureString parameters (Standard tier: 4 KB); names as SSM path segments allow. */
export const SECRET_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
/** Secrets one tool call may resolve: one GetParameters call answers at most 10 names. */
export const MAX_SECRETS_PER_TOOL = 10;

/*
 * Images.
 */

/** The scripted image provider draws locally; beyond this it would only cost the step's memory. */
export const MAX_SCRIPTED_IMAGE_SIDE = 1024;
/** Amazon Nova Canvas (bedrock image nodes): sides 320-4096 in steps of 16, at most 4.19 MP, aspect within 1:4..4:1. */
export const NOVA_CANVAS_MIN_SIDE = 320;
export const NOVA_CANVAS_MAX_SIDE = 4096;
export const NOVA_CANVAS_SIDE_STEP = 16;
export const NOVA_CANVAS_MAX_PIXELS = 4_194_304;
export const NOVA_CANVAS_MAX_ASPECT = 4;
export const NOVA_CANVAS_MAX_PROMPT_CHARS = 1024;
/** An image node's sides, whatever its provider: from the scripted drawing's smallest to Nova Canvas's largest. */
export const MIN_IMAGE_SIDE = 1;
/** @alias of NOVA_CANVAS_MAX_SIDE, by design. */
export const MAX_IMAGE_SIDE = NOVA_CANVAS_MAX_SIDE;
/** An image node's URL: a presigned GET, valid this long (less if the signing role's session ends sooner). */
export const IMAGE_URL_TTL_SECONDS = 3600;

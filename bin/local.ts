import '#lib/twin/untraced-process.ts';
import { resolve } from 'node:path';
import { API_STAGE } from '#functions/routes.ts';
import { startLocalTwin } from '#lib/twin/twin.ts';
import { parseTwinLog, TWIN_LOG_ENV, twinLogSinks, type TwinLogLevel } from '#lib/twin/twin-log.ts';
import { CORS_ALLOWED_ORIGINS_ENV, parseCorsOrigins } from '#shared/http/cors.ts';
import { parseStreamFlushPadding, STREAM_FLUSH_PADDING_ENV } from '#shared/http/stream-padding.ts';
import { MAX_OPEN_STREAMS_ENV, parseMaxOpenStreams, parseStreamWindowSeconds, STREAM_WINDOW_ENV } from '#shared/http/stream-settings.ts';
import {
  parseStreamCallerGone,
  parseStreamHoldBytes,
  TWIN_STREAM_CALLER_GONE_ENV,
  TWIN_STREAM_HOLD_ENV,
} from '#lib/twin/lambda-streaming.ts';
import { parseTwinFaults, TWIN_FAULTS_ENV, TWIN_FAULTS_SEED_ENV, type FaultPlan } from '#lib/twin/faults.ts';
import { parseTwinPort } from '#lib/twin/twin-ports.ts';
import { lambdaNodeMismatch } from '#lib/cdk/lambda-runtime.ts';

/**
 * `npm start`: both APIs on localhost, offline, with embedded stores persisting in $DATA_DIR.
 * PORT (default 3000) serves the API; the stand-ins of the AWS services listen on the ports after it (twin-ports.ts).
 */
const host = process.env.HOST ?? '127.0.0.1';
const dataDir = resolve(process.env.DATA_DIR ?? '.local/data');
const stage = process.env.STAGE ?? API_STAGE;

const otherNode = lambdaNodeMismatch();
if (otherNode) {
  console.error(otherNode);
  process.exit(1);
}

let port: number;
try {
  port = parseTwinPort(process.env.PORT);
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
if (!/^[A-Za-z0-9_]{1,128}$/.test(stage)) {
  console.error(`STAGE must be a stage name (letters, digits, underscore), got ${stage}`);
  process.exit(1);
}

let corsAllowedOrigins: readonly string[];
try {
  corsAllowedOrigins = parseCorsOrigins(process.env[CORS_ALLOWED_ORIGINS_ENV], CORS_ALLOWED_ORIGINS_ENV);
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}

// The deployment's padding of streamed writes (the functions read it too, and would refuse a bad value at cold start).
let streamFlushPaddingBytes: number;
let streamHoldBytes: number;
let streamCallerGone: boolean;
let streamWindowSeconds: number;
let maxOpenStreams: number;
try {
  streamFlushPaddingBytes = parseStreamFlushPadding(process.env[STREAM_FLUSH_PADDING_ENV], STREAM_FLUSH_PADDING_ENV);
  streamHoldBytes = parseStreamHoldBytes(process.env[TWIN_STREAM_HOLD_ENV]);
  streamCallerGone = parseStreamCallerGone(process.env[TWIN_STREAM_CALLER_GONE_ENV]);
  streamWindowSeconds = parseStreamWindowSeconds(process.env[STREAM_WINDOW_ENV], STREAM_WINDOW_ENV);
  maxOpenStreams = parseMaxOpenStreams(process.env[MAX_OPEN_STREAMS_ENV], MAX_OPEN_STREAMS_ENV);
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}

let twinLog: TwinLogLevel;
try {
  twinLog = parseTwinLog(process.env[TWIN_LOG_ENV]);
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}

// Off unless asked for; the seed is printed so that a session that failed can be replayed.
let faults: FaultPlan | undefined;
try {
  faults = parseTwinFaults(process.env[TWIN_FAULTS_ENV], process.env[TWIN_FAULTS_SEED_ENV]);
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}

const twin = await startLocalTwin({
  dataDir,
  host,
  port,
  stage,
  streamHoldBytes,
  streamCallerGone,
  faults,
  nightlySchedule: true,
  ...twinLogSinks(twinLog, (line) => console.log(line)),
});
// Installed before the banner: whoever waits for it may stop the twin at once.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void twin.close().then(() => process.exit(0));
  });
}
console.log(`Local twin listening on ${twin.url} (AWS-shaped URLs: ${twin.url}/${stage}/api/..., short ones: ${twin.url}/api/...)`);
console.log(`  Webhook API:   ${twin.webhookUrl}/api/v1/webhooks/<token>/events | ping   (an HTTP API: its own host, no stage)`);
console.log(`  Workflow API:  ${twin.url}/api/v1/published/workflows   (Authorization: Bearer <key>)`);
console.log(
  `  DynamoDB:      ${twin.twin.dynamodb_endpoint}   S3: ${twin.twin.s3_endpoint}   Step Functions: ${twin.twin.step_functions_endpoint}`,
);
console.log(
  `  Browsers:      ${
    corsAllowedOrigins.length > 0
      ? `CORS for ${corsAllowedOrigins.join(', ')} (Workflow API)`
      : `no CORS (set ${CORS_ALLOWED_ORIGINS_ENV}=https://tool.example to allow a page)`
  }`,
);
const holding =
  streamHoldBytes > 0
    ? `held until ${streamHoldBytes} bytes wait, as Lambda is reported to`
    : `passed on at once (${TWIN_STREAM_HOLD_ENV}=102400 holds them as Lambda is reported to)`;
console.log(`  Streams:       writes ${holding}; padding ${streamFlushPaddingBytes} bytes (${STREAM_FLUSH_PADDING_ENV})`);
console.log(
  `                 ${streamWindowSeconds} s windows (${STREAM_WINDOW_ENV}), ${maxOpenStreams} open at once ` +
    `(${MAX_OPEN_STREAMS_ENV}); ` +
    (streamCallerGone
      ? `a function is told when its caller leaves (${TWIN_STREAM_CALLER_GONE_ENV}=1; Lambda never is)`
      : `as on Lambda, a function is not told when its caller leaves (${TWIN_STREAM_CALLER_GONE_ENV}=1 tells it)`),
);
console.log(`  Data:          ${dataDir}`);
console.log(`  Admin CLI:     npm run --silent admin -- links issue --type calls | publish <dir> | keys create --name N --preset full`);
const shown = { requests: 'a line per request and per execution', executions: 'a line per execution', off: 'none' }[twinLog];
console.log(`  Lines here:    ${shown} (${TWIN_LOG_ENV}=requests|executions|off)`);
if (faults)
  console.log(`  Faults:        ${faults.spec || 'every rate 0'} (seed ${faults.seed}: ${TWIN_FAULTS_SEED_ENV}=${faults.seed} replays it)`);

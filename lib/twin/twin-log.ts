import { LINK_TOKEN_PREFIX } from '#inbound/link-model.ts';
import { secretPrefix } from '#shared/secrets.ts';
import type { ServedApiRequest } from './http-server.ts';
import type { ExecutionActivity } from './sfn-stand-in.ts';
import type { InjectedFault } from './faults.ts';

/**
 * What `npm start` shows on its terminal, as `sam local` and serverless-offline do: a line per API request as its
 * response ends, and a line as each Step Functions execution starts and ends. The lines are written for a person
 * sharing a screen, so no line ever carries a secret whole: a link token keeps what `links list` shows of it, an id
 * its first 8 characters, a query only its shape.
 */
export const TWIN_LOG_ENV = 'TWIN_LOG';

/** Each level shows what the next one does and more: `requests` is everything, `executions` only the Step Functions lines. */
const TWIN_LOG_LEVELS = ['requests', 'executions', 'off'] as const;
export type TwinLogLevel = (typeof TWIN_LOG_LEVELS)[number];

/** `TWIN_LOG` as `npm start` reads it: unset is `requests`; anything else not a level is refused, not ignored. */
export function parseTwinLog(value: string | undefined): TwinLogLevel {
  if (value === undefined || value === '') return 'requests';
  const level = TWIN_LOG_LEVELS.find((candidate) => candidate === value.trim().toLowerCase());
  if (!level) throw new Error(`${TWIN_LOG_ENV} must be one of ${TWIN_LOG_LEVELS.join(', ')}, got ${value}`);
  return level;
}

type Sink = (line: string) => void;

/** The twin's options that a level turns on, each line handed to `write`; injected faults show with the requests. */
export function twinLogSinks(level: TwinLogLevel, write: Sink): { onRequestLine?: Sink; onExecutionLine?: Sink; onFaultLine?: Sink } {
  return {
    onRequestLine: level === 'requests' ? write : undefined,
    onExecutionLine: level === 'requests' || level === 'executions' ? write : undefined,
    onFaultLine: level === 'requests' ? write : undefined,
  };
}

/** Long enough for a workflow id or any word of the route table; every secret the product issues is 43 characters or more. */
const LONGEST_SHOWN_SEGMENT = 24;
const SHOWN_ID_CHARS = 8;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
// eslint-disable-next-line no-control-regex -- a request line is one line: a control byte in a path must not start another.
const CONTROL = /[\u0000-\u001f\u007f]/g;

function shownSegment(segment: string): string {
  // The same prefix `links list` shows (token_prefix), so a line can be matched to its link.
  if (segment.startsWith(LINK_TOKEN_PREFIX)) {
    const shown = secretPrefix(segment, LINK_TOKEN_PREFIX.length);
    return shown.length < segment.length ? `${shown}…` : segment;
  }
  return segment.length > LONGEST_SHOWN_SEGMENT ? `${segment.slice(0, SHOWN_ID_CHARS)}…` : segment;
}

/**
 * A request's path as a line shows it: long segments (tokens, ids) cut, a query reduced to its shape (`?…=…&…`).
 * A caller may put a secret in a query's names as well as in its values (`?<api key>`): the line keeps neither.
 */
export function shownPath(url: string): string {
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  let shown = path.split('/').map(shownSegment).join('/');
  if (queryAt !== -1) {
    const pairs = url.slice(queryAt + 1).split('&');
    shown += `?${pairs.map((pair) => (pair === '' ? '' : pair.includes('=') ? '…=…' : '…')).join('&')}`;
  }
  return shown.replace(CONTROL, '?');
}

/** Execution ids are UUIDs, also inside names (`callback-<id>`, `collect-<task>-manual-<id>`): cut as in request paths, so lines match. */
export function shownExecutionName(name: string): string {
  return name.replace(UUID, (uuid) => `${uuid.slice(0, SHOWN_ID_CHARS)}…`);
}

/**
 * A resource a fault hit, without its ARN's prefix: a table's name, `bucket/key` with its long segments cut (keys
 * carry ids), an execution's machine and name with its execution id cut, a parameter's path, a model.
 */
export function shownResource(resource: string): string {
  const name = resource
    .replace(/^arn:[^:]*:[^:]*:[^:]*:[^:]*:/, '')
    .replace(/^(?:table|foundation-model|inference-profile|application-inference-profile)\//, '')
    .replace(/^(?:stateMachine|execution):/, '')
    .replace(/^parameter(?=\/)/, '');
  return shownExecutionName(name)
    .split('/')
    .map((part) => part.split(':').map(shownSegment).join(':'))
    .join('/')
    .replace(CONTROL, '?');
}

function clock(at: Date): string {
  const two = (value: number) => String(value).padStart(2, '0');
  return `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}.${String(at.getMilliseconds()).padStart(3, '0')}`;
}

function duration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** `12:03:04.567 POST /prod/api/v1/webhooks/whk_AbCdEf…/events 201 WebhookPostEvent 84 ms cold` */
export function requestLine(served: ServedApiRequest, at = new Date()): string {
  const marks = [served.cold ? 'cold' : '', served.streaming ? 'stream' : '', served.finished ? '' : 'unfinished'].filter(Boolean);
  const words = [
    clock(at),
    served.method,
    shownPath(served.url),
    served.status ?? '-',
    served.functionName ?? '-',
    duration(served.durationMs),
    ...marks,
  ];
  return words.join(' ');
}

/** `12:03:04.600 SFN local-workflow 3f2a9c1e… started`, `12:03:23.700 SFN local-workflow 3f2a9c1e… SUCCEEDED 19.1 s` */
export function executionLine(activity: ExecutionActivity, at = new Date()): string {
  const machine = activity.stateMachineArn.slice(activity.stateMachineArn.lastIndexOf(':') + 1);
  const words = [clock(at), 'SFN', machine, shownExecutionName(activity.name)];
  if (activity.event !== 'ended') return [...words, activity.event].join(' ');
  // The error name is the function's own (its error's name) or a StopExecution caller's: one line, whatever it holds.
  const outcome = activity.error ? `${activity.status} (${activity.error.replace(CONTROL, '?')})` : activity.status;
  return [...words, outcome, duration((activity.stopDate ?? at.getTime()) - activity.startDate)].join(' ');
}

/**
 * `12:03:04.567 fault dynamodb:throttle PutItem local-links by WebhookPostEvent ThrottlingException`,
 * `12:03:05.001 fault lambda:crash-after-write WebhookPostEvent Runtime.ExitError`
 */
export function faultLine(fault: InjectedFault, at = new Date()): string {
  const outcome = fault.outcome.replace(CONTROL, '?');
  if (fault.operation === undefined) return [clock(at), 'fault', fault.kind, fault.functionName, outcome].join(' ');
  const operation = fault.operation.replace(CONTROL, '?');
  return [clock(at), 'fault', fault.kind, operation, shownResource(fault.resource ?? ''), 'by', fault.functionName, outcome].join(' ');
}

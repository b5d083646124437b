import { randomBytes, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { FaultKind, FaultPlan } from '#lib/twin/faults.ts';

/**
 * The store faults of `TWIN_FAULTS`, answered as each AWS service answers them, so the real SDK clients parse them
 * into the same error names and retry them as they would on AWS (JSON RPC: `__type` in the body; S3: `<Error><Code>`;
 * Bedrock's REST-JSON: the `x-amzn-errortype` header).
 */
type StoreService = 'dynamodb' | 's3' | 'states' | 'ssm' | 'bedrock';
/** The kinds a store's front door injects; the `lambda:` kinds are the Lambda host's. */
export type StoreFaultKind = Exclude<FaultKind, `lambda:${string}`>;

interface FaultAnswer {
  status: number;
  code: string;
  message: string;
}

const SERVICE_FAULTS: Record<StoreService, readonly StoreFaultKind[]> = {
  dynamodb: ['dynamodb:throttle', 'dynamodb:error'],
  s3: ['s3:error'],
  states: ['sfn:throttle'],
  ssm: ['ssm:throttle'],
  bedrock: ['bedrock:throttle'],
};

/** The Step Functions calls AWS throttles per account (token buckets); the product's other calls are not in question. */
const THROTTLED_SFN_OPERATIONS = new Set(['StartExecution', 'SendTaskSuccess', 'SendTaskFailure', 'SendTaskHeartbeat', 'StopExecution']);

const RATE_EXCEEDED = 'Rate exceeded';

const ANSWERS: Record<StoreFaultKind, readonly FaultAnswer[]> = {
  // Provisioned tables answer the first, on-demand tables (what CDK deploys) the second; a client must handle both.
  'dynamodb:throttle': [
    {
      status: 400,
      code: 'ProvisionedThroughputExceededException',
      message:
        'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with ' +
        'the UpdateTable API.',
    },
    {
      status: 400,
      code: 'ThrottlingException',
      message:
        'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so ' +
        'please try again shortly. If exceptions persist, check if you have a hot key: ' +
        'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html',
    },
  ],
  'dynamodb:error': [{ status: 500, code: 'InternalServerError', message: 'Internal server error' }],
  's3:error': [
    { status: 500, code: 'InternalError', message: 'We encountered an internal error. Please try again.' },
    { status: 503, code: 'SlowDown', message: 'Please reduce your request rate.' },
  ],
  'sfn:throttle': [{ status: 400, code: 'ThrottlingException', message: RATE_EXCEEDED }],
  'ssm:throttle': [{ status: 400, code: 'ThrottlingException', message: RATE_EXCEEDED }],
  'bedrock:throttle': [{ status: 429, code: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' }],
};

/** The namespace AWS puts before a JSON RPC error's name (the SDK keeps what follows the `#`). */
const JSON_NAMESPACE: Record<string, string> = {
  dynamodb: 'com.amazonaws.dynamodb.v20120810',
  states: 'com.amazon.coral.availability',
  ssm: 'com.amazon.coral.availability',
};

const isStoreService = (service: string): service is StoreService => Object.hasOwn(SERVICE_FAULTS, service);

/**
 * Which fault, if any, this call gets. Every kind of the service draws on every call it applies to, so one kind's
 * rate never shifts another's sequence; the first that fires is injected.
 */
export function drawStoreFault(plan: FaultPlan, service: string, operation: string): StoreFaultKind | undefined {
  if (!isStoreService(service)) return undefined;
  if (service === 'states' && !THROTTLED_SFN_OPERATIONS.has(operation)) return undefined;
  const fired = SERVICE_FAULTS[service].filter((kind) => plan.draw(kind));
  return fired[0];
}

/** Answers the request with AWS's error for `kind` (its variant drawn from the plan); returns the error's name. */
export function answerStoreFault(plan: FaultPlan, kind: StoreFaultKind, service: string, method: string, response: ServerResponse): string {
  const answer = plan.pick(kind, ANSWERS[kind]);
  if (service === 's3') answerXml(answer, method, response);
  else if (service === 'bedrock') answerRestJson(answer, response);
  else answerJsonRpc(answer, service === 'ssm' ? '1.1' : '1.0', JSON_NAMESPACE[service]!, response);
  return answer.code;
}

function answerJsonRpc(answer: FaultAnswer, version: '1.0' | '1.1', namespace: string, response: ServerResponse): void {
  response.writeHead(answer.status, { 'content-type': `application/x-amz-json-${version}`, 'x-amzn-requestid': randomUUID() });
  response.end(JSON.stringify({ __type: `${namespace}#${answer.code}`, message: answer.message }));
}

/** Bedrock names the error in a header (with its namespace after a colon) and has only the message in the body. */
function answerRestJson(answer: FaultAnswer, response: ServerResponse): void {
  response.writeHead(answer.status, {
    'content-type': 'application/json',
    'x-amzn-errortype': `${answer.code}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    'x-amzn-requestid': randomUUID(),
  });
  response.end(JSON.stringify({ message: answer.message }));
}

function answerXml(answer: FaultAnswer, method: string, response: ServerResponse): void {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  const hostId = randomBytes(48).toString('base64');
  response.writeHead(answer.status, { 'content-type': 'application/xml', 'x-amz-request-id': requestId, 'x-amz-id-2': hostId });
  // A HEAD answer has no body; the SDK reads the error from the status alone.
  if (method === 'HEAD') return void response.end();
  response.end(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${answer.code}</Code><Message>${answer.message}</Message>` +
      `<RequestId>${requestId}</RequestId><HostId>${hostId}</HostId></Error>`,
  );
}

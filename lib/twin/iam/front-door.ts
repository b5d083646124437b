import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Policy } from './function-policy.ts';
import { oldItemRequest, withOldItem } from './dynamodb-old-item.ts';
import { holdsLoneSurrogate, refuseNotUtf8 } from './dynamodb-strings.ts';
import {
  bedrockPermissions,
  cloudWatchPermissions,
  costExplorerPermissions,
  dynamodbPermissions,
  lambdaPermissions,
  s3Permissions,
  ssmPermissions,
  stepFunctionsPermissions,
  type Permission,
  type ServiceRequest,
} from './required-permissions.ts';
import { LOCAL_REGION } from '#lib/twin/stores.ts';
import type { FaultPlan } from '#lib/twin/faults.ts';
import { answerStoreFault, drawStoreFault } from './store-faults.ts';
import {
  checkQuerySignature,
  checkSignature,
  parseAuthorization,
  parseQueryAuthorization,
  withoutQueryAuthorization,
  type Signature,
  type SignatureCheck,
} from './sigv4.ts';

/** Who may call the stand-ins: each function's own key pair and policy, and the operator. */
export interface LocalPrincipal {
  name: string;
  accessKeyId: string;
  secretAccessKey: string;
  policy: Policy;
  /** Never given an injected fault: the operator (the admin CLI, tests reading stored state) must see the real store. */
  faultFree?: boolean;
}

/** A refused check: who, which action, on what (the request context it was refused with is left out). */
export interface AccessDenial extends Omit<Permission, 'context' | 'refusal'> {
  principal: string;
}

/** Each stand-in's service, by its SigV4 signing name (`ce` is Cost Explorer, `monitoring` CloudWatch). */
export type LocalService = 'dynamodb' | 's3' | 'states' | 'ssm' | 'bedrock' | 'ce' | 'lambda' | 'monitoring';

interface ServiceRules {
  permissions(request: ServiceRequest): Permission[];
  refuse(reply: Reply, code: string, message: string, status?: number): void;
  /** s3rver checks signatures against its own fixed key; the front door has checked ours, so it forwards unsigned. */
  forwardAuthorization: boolean;
}

type Reply = { method: string; response: ServerResponse };

/**
 * JSON RPC services (DynamoDB, Step Functions and CloudWatch on 1.0, SSM and Cost Explorer on 1.1) answer every refusal with 400 and the
 * type in the body.
 */
const refuseJson =
  (version: '1.0' | '1.1') =>
  ({ response }: Reply, code: string, message: string): void => {
    response.writeHead(400, { 'content-type': `application/x-amz-json-${version}`, 'x-amzn-errortype': code });
    response.end(JSON.stringify({ __type: `com.amazon.coral.service#${code}`, message }));
  };

/** REST-JSON services (Bedrock Runtime) answer an authentication or authorization failure with 403 and the type in a header. */
function refuseRestJson({ response }: Reply, code: string, message: string): void {
  response.writeHead(403, { 'content-type': 'application/json', 'x-amzn-errortype': code });
  response.end(JSON.stringify({ message }));
}

/** Lambda (REST-JSON) answers a refusal with 403, the type in a header and `{Type, Message}` in the body. */
function refuseLambda({ response }: Reply, code: string, message: string): void {
  response.writeHead(403, { 'content-type': 'application/json', 'x-amzn-errortype': code });
  response.end(JSON.stringify({ Type: 'User', Message: message }));
}

const escapeXml = (text: string) => text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

function refuseXml({ method, response }: Reply, code: string, message: string, status = 403): void {
  response.writeHead(status, { 'content-type': 'application/xml' });
  // A HEAD answer has no body; the SDK reads the code from the status alone.
  if (method === 'HEAD') return void response.end();
  response.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error>`);
}

const RULES: Record<LocalService, ServiceRules> = {
  dynamodb: { permissions: dynamodbPermissions, refuse: refuseJson('1.0'), forwardAuthorization: true },
  states: { permissions: stepFunctionsPermissions, refuse: refuseJson('1.0'), forwardAuthorization: true },
  s3: { permissions: s3Permissions, refuse: refuseXml, forwardAuthorization: false },
  ssm: { permissions: ssmPermissions, refuse: refuseJson('1.1'), forwardAuthorization: true },
  bedrock: { permissions: bedrockPermissions, refuse: refuseRestJson, forwardAuthorization: true },
  ce: { permissions: costExplorerPermissions, refuse: refuseJson('1.1'), forwardAuthorization: true },
  lambda: { permissions: lambdaPermissions, refuse: refuseLambda, forwardAuthorization: true },
  monitoring: { permissions: cloudWatchPermissions, refuse: refuseJson('1.0'), forwardAuthorization: true },
};

const INVALID_KEY: Record<LocalService, string> = {
  dynamodb: 'UnrecognizedClientException',
  states: 'UnrecognizedClientException',
  s3: 'InvalidAccessKeyId',
  ssm: 'UnrecognizedClientException',
  bedrock: 'UnrecognizedClientException',
  ce: 'UnrecognizedClientException',
  lambda: 'UnrecognizedClientException',
  monitoring: 'UnrecognizedClientException',
};
const BAD_SIGNATURE: Record<LocalService, string> = {
  dynamodb: 'InvalidSignatureException',
  states: 'InvalidSignatureException',
  s3: 'SignatureDoesNotMatch',
  ssm: 'InvalidSignatureException',
  bedrock: 'InvalidSignatureException',
  ce: 'InvalidSignatureException',
  lambda: 'InvalidSignatureException',
  monitoring: 'InvalidSignatureException',
};

/** S3 refuses a request carrying `x-amz-*` headers its signature does not cover (they could have been added by anyone). */
function unsignedAmzHeaders(headers: IncomingHttpHeaders, signed: readonly string[]): boolean {
  return Object.keys(headers).some((name) => name.startsWith('x-amz-') && !signed.includes(name));
}

export interface FrontDoorOptions {
  service: LocalService;
  upstream: string;
  port: number;
  principals: readonly LocalPrincipal[];
  onDenied(denial: AccessDenial): void;
  /** Every request that reached the store: who, what, and when it started and ended (round-trip counting). */
  onServed?: (served: ServedRequest) => void;
  /** `TWIN_FAULTS`: some of the functions' calls get AWS's throttle or server error instead of the store's answer. */
  faults?: FaultPlan;
}

export interface ServedRequest {
  service: LocalService;
  principal: string;
  /** The JSON services (DynamoDB, SSM, Step Functions, Cost Explorer, CloudWatch): the operation; S3, Bedrock, Lambda: method and path. */
  operation: string;
  /** The first resource it acted on (a table, an object, a parameter). */
  resource: string;
  startedAtMs: number;
  endedAtMs: number;
  /** Its places in the front doors' order of events (`nextEvent`): as it arrived, and as its answer's last bytes went out. */
  arrived: number;
  answered: number;
}

/**
 * One count of events for every front door of the process (they share its one thread): a request arriving, and the
 * last bytes of an answer handed to its socket. A request its caller sent after reading an answer counts higher than
 * that answer, however loaded the machine. Clock readings cannot say so: `finish` may come after the caller has read
 * the answer and sent its next request.
 */
let frontDoorEvents = 0;
const nextEvent = () => ++frontDoorEvents;

function readAll(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/**
 * The IAM front door of a local stand-in: it authenticates each request by its SigV4 signature, authorizes every
 * action and resource the request needs against the caller's policy (`AccessDeniedException` / `AccessDenied`
 * otherwise, as AWS answers), and only then forwards it to the stand-in.
 */
export async function startFrontDoor(options: FrontDoorOptions): Promise<{ endpoint: string; server: Server; close(): Promise<void> }> {
  const rules = RULES[options.service];
  const byKey = new Map(options.principals.map((principal) => [principal.accessKeyId, principal]));
  const upstream = new URL(options.upstream);
  const agent = new Agent({ keepAlive: true });

  // Deliberately not awaited: Node ignores a request listener's result; serve() answers or destroys each request itself.
  const server = createServer((request, response) => void serve(request, response));

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const startedAtMs = performance.now();
    const arrived = nextEvent();
    let body: Buffer;
    try {
      body = await readAll(request);
    } catch {
      return void response.destroy();
    }
    const sentUrl = request.url ?? '/';
    const method = request.method ?? 'GET';
    const reply = { method, response };
    const s3 = options.service === 's3';
    // S3 also takes a presigned URL: the signature is in the query, and the store behind is asked without it.
    const query = s3 ? parseQueryAuthorization(sentUrl) : undefined;
    if (query && request.headers.authorization !== undefined) {
      return rules.refuse(
        reply,
        'InvalidArgument',
        'Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the ' +
          'Authorization header should be specified',
        400,
      );
    }
    if (query && 'malformed' in query) return rules.refuse(reply, 'AuthorizationQueryParametersError', query.malformed, 400);
    const presigned = query?.signature;
    const url = presigned ? withoutQueryAuthorization(sentUrl) : sentUrl;
    const signature: Signature | undefined = presigned ?? parseAuthorization(request.headers);
    if (!signature) {
      if (s3) return rules.refuse(reply, 'AccessDenied', 'Access Denied');
      return rules.refuse(reply, 'MissingAuthenticationTokenException', 'Request is missing Authentication Token');
    }
    const region = signature.scope.split('/')[1];
    if (region !== LOCAL_REGION) {
      if (!s3)
        return rules.refuse(reply, BAD_SIGNATURE[options.service], `Credential should be scoped to a valid region, not '${region}'.`);
      const [code, part] = presigned
        ? ['AuthorizationQueryParametersError', 'Error parsing the X-Amz-Credential parameter;']
        : ['AuthorizationHeaderMalformed', 'The authorization header is malformed;'];
      return rules.refuse(reply, code, `${part} the region '${region}' is wrong; expecting '${LOCAL_REGION}'`, 400);
    }
    const principal = byKey.get(signature.accessKeyId);
    if (!principal) return rules.refuse(reply, INVALID_KEY[options.service], 'The security token included in the request is invalid.');
    if (s3 && unsignedAmzHeaders(request.headers, signature.signedHeaders))
      return rules.refuse(reply, 'AccessDenied', 'There were headers present in the request which were not signed');
    const signed = { method, url: sentUrl, headers: request.headers, body };
    let check: SignatureCheck = 'mismatch';
    if (signature.service === options.service) {
      check = presigned
        ? checkQuerySignature(signed, presigned, principal.secretAccessKey)
        : checkSignature(signed, signature, principal.secretAccessKey);
    }
    if (check === 'expired' && presigned) return rules.refuse(reply, 'AccessDenied', 'Request has expired');
    if (check !== 'valid') {
      const message =
        check === 'expired'
          ? 'Signature expired: the signing time is more than 15 minutes from now'
          : 'The request signature we calculated does not match the signature you provided.';
      return rules.refuse(reply, BAD_SIGNATURE[options.service], message);
    }
    const target = String(request.headers['x-amz-target'] ?? '');
    const needs = rules.permissions({ method, url, target, body });
    const denied = needs.find((needed) => !principal.policy.allows(needed.action, needed.resource, needed.context));
    if (denied) {
      options.onDenied({ principal: principal.name, action: denied.action, resource: denied.resource });
      return rules.refuse(
        reply,
        s3 ? 'AccessDenied' : 'AccessDeniedException',
        // IAM's own words, unless the service words it (Bedrock, for the Marketplace actions it takes for the caller).
        denied.refusal ??
          `User: arn:aws:sts::000000000000:assumed-role/${principal.name}/${principal.name} is not authorized to perform: ` +
            `${denied.action} on resource: ${denied.resource} because no identity-based policy allows the ${denied.action} action`,
      );
    }
    if (options.service === 'dynamodb' && holdsLoneSurrogate(body)) return refuseNotUtf8(response);
    // After authentication and authorization, as AWS checks a call before it can throttle it.
    if (options.faults && !principal.faultFree && injectedFault(options.faults, principal, needs, target, reply)) return;
    let answered: number | undefined;
    if (options.onServed) {
      const operation = target ? target.replace(/^.*\./, '') : `${method} ${url.split('?')[0]}`;
      const resource = needs[0]?.resource ?? '';
      response.once('finish', () =>
        options.onServed!({
          service: options.service,
          principal: principal.name,
          operation,
          resource,
          startedAtMs,
          endedAtMs: performance.now(),
          arrived,
          answered: answered ?? nextEvent(),
        }),
      );
    }
    forward(request, response, body, method, url, principal, (event) => (answered = event));
  }

  /** A fault of the plan instead of the store's answer; false when the call gets none. */
  function injectedFault(plan: FaultPlan, principal: LocalPrincipal, needs: readonly Permission[], target: string, reply: Reply): boolean {
    const kind = drawStoreFault(plan, options.service, target.replace(/^.*\./, ''));
    if (!kind) return false;
    const outcome = answerStoreFault(plan, kind, options.service, reply.method, reply.response);
    const [first] = needs;
    plan.inject({
      kind,
      functionName: principal.name,
      operation: first?.action.replace(/^[^:]*:/, '') ?? '',
      resource: first?.resource ?? '',
      outcome,
    });
    return true;
  }

  /** Sends the request on to the store and its answer back; `onAnswered` gets the event count as the answer's last bytes go out. */
  function forward(
    request: IncomingMessage,
    response: ServerResponse,
    body: Buffer,
    method: string,
    url: string,
    principal: LocalPrincipal,
    onAnswered: (event: number) => void,
  ): void {
    const headers = { ...request.headers };
    if (!rules.forwardAuthorization) delete headers.authorization;
    const upstreamRequest = httpRequest(
      { host: upstream.hostname, port: upstream.port, method, path: url, headers, agent },
      (upstreamResponse) => {
        // Without s3:ListBucket, S3 answers a missing object with 403, not 404; no function is granted ListBucket.
        const bucketArn = `arn:aws:s3:::${url.split(/[/?]/)[1] ?? ''}`;
        const missingHidden = !principal.policy.allows('s3:ListBucket', bucketArn);
        if (options.service === 's3' && upstreamResponse.statusCode === 404 && (method === 'GET' || method === 'HEAD') && missingHidden) {
          upstreamResponse.resume();
          rules.refuse({ method, response }, 'AccessDenied', 'Access Denied');
          return onAnswered(nextEvent());
        }
        const oldItem = options.service === 'dynamodb' ? oldItemRequest(String(request.headers['x-amz-target'] ?? ''), body) : undefined;
        if (oldItem) {
          withOldItem(upstream, agent, request.headers, oldItem, upstreamResponse).then(
            (answer) => {
              response.writeHead(answer.status, answer.headers).end(answer.body);
              onAnswered(nextEvent());
            },
            () => response.destroy(),
          );
          return;
        }
        response.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
        upstreamResponse.pipe(response);
        // Listening after the pipe: each of these runs just after it has written a chunk, or ended the answer. The
        // last chunk completes the answer its caller reads (the end may come a turn later); with no body, the end.
        let lastChunk: number | undefined;
        upstreamResponse.on('data', () => void (lastChunk = nextEvent()));
        upstreamResponse.once('end', () => onAnswered(lastChunk ?? nextEvent()));
      },
    );
    upstreamRequest.on('error', () => response.destroy());
    upstreamRequest.end(body);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}

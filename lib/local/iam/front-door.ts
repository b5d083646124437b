import { Agent, createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Policy } from './function-policy.ts';
import { bedrockPermissions, dynamodbPermissions, s3Permissions, ssmPermissions, stepFunctionsPermissions, type Permission, type ServiceRequest } from './required-permissions.ts';
import {
  checkQuerySignature,
  checkSignature,
  MAX_PRESIGNED_EXPIRY_SECONDS,
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
}

export interface AccessDenial extends Permission {
  principal: string;
}

export type LocalService = 'dynamodb' | 's3' | 'states' | 'ssm' | 'bedrock';

interface ServiceRules {
  permissions(request: ServiceRequest): Permission[];
  refuse(response: ServiceResponse, code: string, message: string): void;
  /** s3rver checks signatures against its own fixed key; the front door has checked ours, so it forwards unsigned. */
  forwardAuthorization: boolean;
}

type ServiceResponse = { method: string; response: ServerResponse };

function refuseJson({ response }: ServiceResponse, code: string, message: string): void {
  response.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': code });
  response.end(JSON.stringify({ __type: `com.amazon.coral.service#${code}`, message }));
}

/** REST-JSON services (Bedrock Runtime) answer an authorization failure with 403 and the type in a header. */
function refuseRestJson({ response }: ServiceResponse, code: string, message: string): void {
  response.writeHead(code === 'AccessDeniedException' ? 403 : 400, { 'content-type': 'application/json', 'x-amzn-errortype': code });
  response.end(JSON.stringify({ message }));
}

const escapeXml = (text: string) => text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

function refuseXml({ method, response }: ServiceResponse, code: string, message: string): void {
  response.writeHead(403, { 'content-type': 'application/xml' });
  // A HEAD answer has no body; the SDK reads the code from the status alone.
  if (method === 'HEAD') return void response.end();
  response.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error>`);
}

const RULES: Record<LocalService, ServiceRules> = {
  dynamodb: { permissions: dynamodbPermissions, refuse: refuseJson, forwardAuthorization: true },
  states: { permissions: stepFunctionsPermissions, refuse: refuseJson, forwardAuthorization: true },
  s3: { permissions: s3Permissions, refuse: refuseXml, forwardAuthorization: false },
  ssm: { permissions: ssmPermissions, refuse: refuseJson, forwardAuthorization: true },
  bedrock: { permissions: bedrockPermissions, refuse: refuseRestJson, forwardAuthorization: true },
};

const INVALID_KEY: Record<LocalService, string> = {
  dynamodb: 'UnrecognizedClientException',
  states: 'UnrecognizedClientException',
  s3: 'InvalidAccessKeyId',
  ssm: 'UnrecognizedClientException',
  bedrock: 'UnrecognizedClientException',
};
const BAD_SIGNATURE: Record<LocalService, string> = {
  dynamodb: 'InvalidSignatureException',
  states: 'InvalidSignatureException',
  s3: 'SignatureDoesNotMatch',
  ssm: 'InvalidSignatureException',
  bedrock: 'InvalidSignatureException',
};

export interface FrontDoorOptions {
  service: LocalService;
  upstream: string;
  port: number;
  principals: readonly LocalPrincipal[];
  onDenied(denial: AccessDenial): void;
}

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
    let body: Buffer;
    try {
      body = await readAll(request);
    } catch {
      return void response.destroy();
    }
    const sentUrl = request.url ?? '/';
    const method = request.method ?? 'GET';
    const reply = { method, response };
    // S3 also takes a presigned URL: the signature is in the query, and the store behind is asked without it.
    const presigned = options.service === 's3' && !request.headers.authorization ? parseQueryAuthorization(sentUrl) : undefined;
    const url = presigned ? withoutQueryAuthorization(sentUrl) : sentUrl;
    const signature: Signature | undefined = presigned ?? parseAuthorization(request.headers);
    if (!signature) {
      if (options.service === 's3') return rules.refuse(reply, 'AccessDenied', 'Access Denied');
      return rules.refuse(reply, 'MissingAuthenticationTokenException', 'Request is missing Authentication Token');
    }
    if (presigned && presigned.expiresSeconds > MAX_PRESIGNED_EXPIRY_SECONDS) {
      return rules.refuse(reply, 'AuthorizationQueryParametersError', 'X-Amz-Expires must be less than a week (in seconds) that is; 604800');
    }
    const principal = byKey.get(signature.accessKeyId);
    if (!principal) return rules.refuse(reply, INVALID_KEY[options.service], 'The security token included in the request is invalid.');
    const signed = { method, url: sentUrl, headers: request.headers, body };
    let check: SignatureCheck = 'mismatch';
    if (signature.service === options.service) {
      check = presigned ? checkQuerySignature(signed, presigned, principal.secretAccessKey) : checkSignature(signed, signature, principal.secretAccessKey);
    }
    if (check === 'expired' && presigned) return rules.refuse(reply, 'AccessDenied', 'Request has expired');
    if (check !== 'valid') {
      const message = check === 'expired' ? 'Signature expired: the signing time is more than 15 minutes from now' : 'The request signature we calculated does not match the signature you provided.';
      return rules.refuse(reply, BAD_SIGNATURE[options.service], message);
    }
    const target = String(request.headers['x-amz-target'] ?? '');
    const denied = rules.permissions({ method, url, target, body }).find((needed) => !principal.policy.allows(needed.action, needed.resource));
    if (denied) {
      options.onDenied({ principal: principal.name, ...denied });
      return rules.refuse(
        reply,
        options.service === 's3' ? 'AccessDenied' : 'AccessDeniedException',
        `User: arn:aws:sts::000000000000:assumed-role/${principal.name}/${principal.name} is not authorized to perform: ${denied.action} on resource: ${denied.resource} because no identity-based policy allows the ${denied.action} action`,
      );
    }
    forward(request, response, body, method, url, principal);
  }

  function forward(request: IncomingMessage, response: ServerResponse, body: Buffer, method: string, url: string, principal: LocalPrincipal): void {
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
          return rules.refuse({ method, response }, 'AccessDenied', 'Access Denied');
        }
        response.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
        upstreamResponse.pipe(response);
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

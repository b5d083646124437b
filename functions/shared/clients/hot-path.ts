import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { NodeHttpHandler } from '@smithy/node-http-handler';

/**
 * Settings for the clients on every request's path (DynamoDB, Step Functions, S3). Sockets are kept alive and
 * reused: a new TLS connection per call would cost more than the call. Three attempts in the standard retry mode
 * ride out a throttle within API Gateway's 29 s; more would only make a failing request slower to fail.
 */
export function hotPathClientConfig() {
  const sockets = { keepAlive: true, maxSockets: 50 };
  return {
    maxAttempts: 3,
    retryMode: 'standard',
    requestHandler: new NodeHttpHandler({
      httpAgent: new HttpAgent(sockets),
      httpsAgent: new HttpsAgent(sockets),
      connectionTimeout: 3_000,
    }),
  } as const;
}

/** What the removal below needs of a client. */
interface ClientWithStack {
  middlewareStack: { remove(name: string): boolean };
}

/**
 * Drops the SDK's logger middleware, which builds a copy of every input and output with sensitive fields masked for
 * its logger on every call, even when that logger discards everything (the default): the functions log through
 * Powertools and never give the SDK a logger.
 */
export function withoutSdkLogging<Client extends ClientWithStack>(client: Client): Client {
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}

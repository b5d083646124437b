import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './listen.ts';

/** GetAccountSettings' route in the Lambda API (REST-JSON, API version 2016-08-19). */
export const ACCOUNT_SETTINGS_PATH = '/2016-08-19/account-settings';

/** Lambda's default quota of concurrent executions in a Region; an account may have less (new accounts) or more. */
export const DEFAULT_LAMBDA_CONCURRENCY_LIMIT = 1000;

/**
 * Lambda's fixed quotas as GetAccountSettings reports them: 75 GB of deployment packages and layers in a Region,
 * 250 MB unzipped, 50 MB for a package uploaded directly.
 */
const CODE_SIZE_LIMITS = { TotalCodeSize: 80_530_636_800, CodeSizeUnzipped: 262_144_000, CodeSizeZipped: 52_428_800 };

export interface LambdaAccountStandInOptions {
  /** The account's concurrent executions quota (a positive integer). */
  concurrencyLimit: number;
  /** How many functions the twin hosts (its routes and task functions). */
  functionCount: number;
  port?: number;
}

/** Lambda's REST-JSON errors: the type in a header, `{Type, Message}` in the body. */
function fail(response: ServerResponse, status: number, type: string, message: string): void {
  response.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type });
  response.end(JSON.stringify({ Type: 'User', Message: message }));
}

/**
 * The twin's Lambda API, for the account's settings only (`GET /2016-08-19/account-settings`, what
 * GetAccountSettingsCommand sends): the concurrency quota, all of it unreserved (the twin reserves concurrency for no
 * function), and as usage the functions the twin hosts. The twin deploys no packages, so its code storage in use is
 * 0. Any other route is an operation this endpoint does not know (404). The IAM front door before it authorizes the
 * call; the twin does not hold its invocations to the quota.
 */
export async function startLambdaAccountStandIn(
  options: LambdaAccountStandInOptions,
): Promise<{ endpoint: string; close(): Promise<void> }> {
  if (!Number.isSafeInteger(options.concurrencyLimit) || options.concurrencyLimit < 1) {
    throw new Error(`lambdaConcurrencyLimit must be a positive whole number of concurrent executions, got ${options.concurrencyLimit}`);
  }
  const settings = {
    AccountLimit: {
      ...CODE_SIZE_LIMITS,
      ConcurrentExecutions: options.concurrencyLimit,
      UnreservedConcurrentExecutions: options.concurrencyLimit,
    },
    AccountUsage: { TotalCodeSize: 0, FunctionCount: options.functionCount },
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    request.on('error', () => response.destroy());
    request.on('end', () => {
      const path = (request.url ?? '/').split('?')[0];
      if (request.method === 'GET' && path === ACCOUNT_SETTINGS_PATH) {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(settings));
        return;
      }
      fail(
        response,
        404,
        'UnknownOperationException',
        `Unknown operation ${request.method ?? ''} ${path ?? ''}: the twin's Lambda endpoint answers GetAccountSettings only`,
      );
    });
  });
  return listenOnLoopback(server, options.port);
}

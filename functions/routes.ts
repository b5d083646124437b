import type { ErrorBodyShape } from './shared/http-errors.ts';
import type { Access, BucketName, TableName } from './shared/resources.ts';

/**
 * The route table: the one list of HTTP routes. `lib/constructs/api.ts` builds API Gateway resources
 * and Lambda functions from it; `lib/local` serves the same handlers from it on localhost.
 */
export interface Route {
  /** Stable name: the Lambda function's construct id. */
  readonly id: string;
  readonly method: 'GET' | 'POST';
  /** API Gateway resource path, with `{param}` placeholders. */
  readonly path: string;
  /** Module under `functions/` exporting `handler`. */
  readonly handler: string;
  readonly errorShape: ErrorBodyShape;
  /** What the handler touches; each becomes an environment variable and a grant of exactly that access. */
  readonly tables: Partial<Record<TableName, Access>>;
  readonly buckets?: Partial<Record<BucketName, Access>>;
}

const WEBHOOKS = '/api/v1/webhooks/{token}';

export const routes: readonly Route[] = [
  {
    id: 'WebhookPing',
    method: 'GET',
    path: `${WEBHOOKS}/ping`,
    handler: 'inbound/ping.ts',
    errorShape: 'webhook',
    tables: { links: 'read', counters: 'readWrite' },
  },
  {
    id: 'WebhookPostEvent',
    method: 'POST',
    path: `${WEBHOOKS}/events`,
    handler: 'inbound/post-event.ts',
    errorShape: 'webhook',
    tables: { links: 'readWrite', counters: 'readWrite', inboundEvents: 'readWrite' },
    buckets: { bodies: 'readWrite' },
  },
];

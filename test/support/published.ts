import { fileURLToPath } from 'node:url';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { runCli } from '#lib/admin/cli.ts';
import { createPublishedClient } from '#lib/client/published-client.ts';
import { documentedFetch } from './fetch.ts';
import { http, type HttpResult } from './http.ts';
import { startTestTwin, type TestTwin } from './local-twin.ts';

export const WORKFLOW_FIXTURES = fileURLToPath(new URL('../fixtures/workflows/', import.meta.url));

/** Publishes the fixture workflows to `project` and answers the admin CLI's JSON. */
export function publishFixtures(twin: TestTwin, project = 'default') {
  return twin.admin('publish', WORKFLOW_FIXTURES, '--project', project);
}

export async function createKey(
  twin: TestTwin,
  access: string[] | 'read' | 'execute' | 'full',
  options: { project?: string; expires?: string } = {},
) {
  const accessArgs = Array.isArray(access) ? ['--scopes', access.join(',')] : ['--preset', access];
  const created = await twin.admin(
    'keys',
    'create',
    '--name',
    'test key',
    ...accessArgs,
    ...(options.project ? ['--project', options.project] : []),
    ...(options.expires ? ['--expires', options.expires] : []),
  );
  return { keyId: created.key_id as string, key: created.key as string };
}

/** A key that has expired: made by the CLI as it would have been made the day before its expiry (the CLI refuses a past one). */
export async function createExpiredKey(access: 'read' | 'execute' | 'full', expires = '2020-01-01T00:00:00Z') {
  const dayBefore = Date.parse(expires) - 24 * 3_600_000;
  const result = await runCli(['keys', 'create', '--name', 'expired key', '--preset', access, '--expires', expires, '--json'], {
    stdin: () => Promise.resolve(''),
    now: () => dayBefore,
  });
  const created = JSON.parse(result.stdout) as { key_id?: string; key?: string; error?: string };
  if (result.exitCode !== 0) throw new Error(`keys create failed: ${created.error}`);
  return { keyId: created.key_id!, key: created.key! };
}

/** A client of the Published Workflow API with one key. */
export function publishedClient(twin: TestTwin, key: string | undefined) {
  const base = `${twin.url}/api/v1/published`;
  const headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  const call = (method: string, path: string, body?: unknown): Promise<HttpResult> =>
    http(`${base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
    });
  return {
    call,
    listWorkflows: () => call('GET', '/workflows'),
    getWorkflow: (id: string) => call('GET', `/workflows/${id}`),
    execute: (id: string, body: unknown) => call('POST', `/workflows/${id}/execute`, body),
    getExecution: (id: string) => call('GET', `/executions/${id}`),
    stop: (id: string) => call('POST', `/executions/${id}/stop`),
    approve: (id: string, body?: unknown) => call('POST', `/executions/${id}/approve`, body),
    reject: (id: string, body?: unknown) => call('POST', `/executions/${id}/reject`, body),
  };
}

/** Polls GET /executions/{id} until `done` holds (the API's own polling pattern), up to `timeoutMs`. */
export async function pollExecution(
  client: ReturnType<typeof publishedClient>,
  executionId: string,
  done: (body: any) => boolean,
  timeoutMs = 10_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await client.getExecution(executionId);
    if (response.status !== 200) throw new Error(`GET execution answered ${response.status}: ${response.text}`);
    if (done(response.body) || Date.now() > deadline) return response.body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The typed client of lib/client (what callers copy) with one key, over `fetch` (default: documentedFetch, which holds
 * every answer, streams included, to the OpenAPI document; a test that puts a fetch of its own in between passes
 * documentedFetch on).
 */
export function typedClient(
  twin: TestTwin,
  key: string,
  fetch: (request: Request) => Promise<Response> = (request) => documentedFetch(request),
) {
  return createPublishedClient({ baseUrl: twin.url, key, fetch });
}

/**
 * The twin with the fixture workflows published to the default project and a key with every scope: most API tests'
 * start. `options` as startTestTwin's (e.g. `streamHoldBytes`, to hold streamed writes as Lambda is reported to).
 */
export async function startPublishedTwin(options: Parameters<typeof startTestTwin>[0] = {}): Promise<{ twin: TestTwin; key: string }> {
  const twin = await startTestTwin(options);
  await publishFixtures(twin);
  return { twin, key: (await createKey(twin, 'full')).key };
}

/** The runs stored for a user: each start writes one `execution#<id>` record. */
export async function storedRunsOf(twin: TestTwin, userId: string): Promise<string[]> {
  const { Items } = await twin.dynamo.send(
    new ScanCommand({
      TableName: twin.twin.tables.executions,
      FilterExpression: 'begins_with(pk, :record) AND user_id = :user',
      ExpressionAttributeValues: { ':record': 'execution#', ':user': userId },
    }),
  );
  return (Items ?? []).map((item) => item.execution_id as string);
}

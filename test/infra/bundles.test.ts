import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeFunctions } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { bundleFunction } from '#lib/cdk/bundling/bundle.ts';
import { sdkTracingOf } from '#lib/cdk/constructs/handler-function.ts';
import { defaultProvider } from '#lib/cdk/bundling/lambda-credentials.ts';
import { gte } from '#lib/cdk/bundling/semver-gte.ts';
import { LOCAL_CREDENTIALS, localTableName, startLocalStores } from '#lib/twin/stores.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';
import { LAMBDA_RUNTIME } from '#lib/cdk/lambda-runtime.ts';
import { INFERENCE_PROFILES_ENV } from '#engine/inference-profiles.ts';
import { redocScript } from '#shared/http/api-reference/redoc-script.ts';
import { REDOC_SCRIPT_FILE, REDOC_STANDALONE_MODULE } from '#shared/http/api-reference/redoc-standalone.ts';
import {
  BUNDLE_BUDGET_BYTES,
  importInFreshNode,
  listFunctionBundles,
  staticImportClosure,
  type FunctionBundle,
} from '../bench/bundle-list.ts';

/**
 * The function bundles as `cdk synth` makes them (local esbuild, no Docker): one synthesis with bundling for the
 * whole file. Sizes are deterministic, so they are asserted; import times are a benchmark (`npm run bundles`).
 */
const KB = 1000;

let bundles: FunctionBundle[];
const idOf = (bundle: FunctionBundle) => bundle.name.split('/').at(-1)!;
const scratch: string[] = [];
const scratchDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

beforeAll(() => {
  process.env.CDK_DOCKER = '/bin/false';
  const app = new App({
    outdir: scratchDir('synth-'),
    builtinCloudFormationValidation: false,
    // As the CLI sets them: construct paths and asset directories in the template's metadata.
    context: { 'aws:cdk:enable-path-metadata': true, 'aws:cdk:enable-asset-metadata': true },
  });
  const stack = new PlatformStack(app, 'Bundled', { env: { region: 'us-east-1' } });
  bundles = listFunctionBundles(app.synth().directory);
  // The step function's profile map is a Fn::Join of the profiles' ARNs, which CloudFormation resolves at deploy; the
  // listing's placeholder is no JSON map, which the step function refuses at cold start. Give it the deployed shape.
  const profiles = JSON.stringify(
    Object.fromEntries(
      stack.engine.bedrockModels.map((model, i) => [
        model,
        `arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/dummy${i}`,
      ]),
    ),
  );
  for (const bundle of bundles) if (INFERENCE_PROFILES_ENV in bundle.environment) bundle.environment[INFERENCE_PROFILES_ENV] = profiles;
}, 120_000);

describe('function bundles from cdk synth', () => {
  it('bundles every function with the local esbuild, without Docker', () => {
    expect(bundles.map(idOf).sort()).toEqual([...routeFunctions(), ...taskFunctions].map((entry) => entry.id).sort());
  });

  it('keeps every bundle under 500 KB of code loaded at cold start', () => {
    const report = bundles.map((bundle) => `${idOf(bundle)} ${(bundle.bundleBytes / KB).toFixed(0)} KB`);
    for (const bundle of bundles) expect(bundle.bundleBytes, report.join(', ')).toBeLessThanOrEqual(BUNDLE_BUDGET_BYTES);
  });

  it('leaves the X-Ray SDK out unless SDK tracing is asked for, and says so to Powertools', () => {
    for (const bundle of bundles) {
      const code = bundle.codeFiles.map((file) => readFileSync(file, 'utf8')).join('\n');
      expect(code, bundle.name).not.toContain('AWS_XRAY_CONTEXT_MISSING');
      expect(bundle.environment.POWERTOOLS_TRACE_ENABLED, bundle.name).toBe('false');
    }
  });

  it('ships external source maps without sources, referenced but never loaded at start', () => {
    for (const bundle of bundles) {
      expect(bundle.environment.NODE_OPTIONS ?? '', bundle.name).not.toContain('--enable-source-maps');
      for (const file of bundle.codeFiles) {
        const code = readFileSync(file, 'utf8');
        expect(code, file).not.toContain('sourceMappingURL=data:');
        expect(code.trimEnd().endsWith(`//# sourceMappingURL=${basename(file)}.map`), file).toBe(true);
        const map = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sourcesContent?: unknown };
        expect(map.sourcesContent, file).toBeUndefined();
      }
    }
  });

  it('leaves code reached only by a dynamic import() out of what a cold start loads, where that loads less', () => {
    // The S3 client is imported on the first large run value or webhook body (functions/*/wiring.ts).
    for (const id of ['WorkflowStep', 'PublishedGetExecution', 'WorkflowDeliverCallback', 'WebhookPostEvent']) {
      const bundle = bundles.find((candidate) => idOf(candidate) === id)!;
      expect(bundle.lazyBytes, id).toBeGreaterThan(100 * KB);
      expect(staticImportClosure(bundle.bundleFile).size, id).toBeLessThan(bundle.codeFiles.length);
      const lazyCode = bundle.codeFiles
        .filter((file) => !staticImportClosure(bundle.bundleFile).has(file))
        .map((file) => readFileSync(file, 'utf8'));
      expect(lazyCode.join('\n'), id).toContain('PutObject');
    }
    for (const bundle of bundles) {
      expect(bundle.bundleBytes + bundle.lazyBytes, bundle.name).toBe(bundle.codeFiles.reduce((sum, file) => sum + statSync(file).size, 0));
    }
  });

  it("carries zod/mini with no locale but English, no classic zod at cold start, and no credential provider but the environment's", () => {
    for (const bundle of bundles) {
      const code = bundle.codeFiles.map((file) => readFileSync(file, 'utf8')).join('\n');
      const coldStartCode = [...staticImportClosure(bundle.bundleFile)].map((file) => readFileSync(file, 'utf8')).join('\n');
      expect(code, bundle.name).toContain('Invalid input');
      expect(code, bundle.name).not.toContain('Eingabe');
      expect(code, bundle.name).not.toContain('Entrada inv');
      // Classic zod's schema classes: an `import 'zod'` would bring them. Only the MCP client (loaded with an
      // agent's first MCP tool, WorkflowStep only) may carry them, as its SDK is built on classic zod.
      expect(coldStartCode, bundle.name).not.toContain('"ZodString"');
      if (idOf(bundle) !== 'WorkflowStep') expect(code, bundle.name).not.toContain('"ZodString"');
      expect(code, bundle.name).not.toContain('AssumeRoleWithWebIdentity');
      expect(code, bundle.name).not.toContain('credential_process');
    }
  });

  it('loads every bundle in a fresh Node process with its own environment, exporting a handler', () => {
    for (const bundle of bundles) expect(() => importInFreshNode(bundle), bundle.name).not.toThrow();
  }, 120_000);

  it('answers from a bundle as on Lambda: environment credentials, the SDK client, the real table', async () => {
    const stores = await startLocalStores(scratchDir('bundle-stores-'), { dynamodb: 0, s3: 0 });
    try {
      const ping = bundles.find((bundle) => idOf(bundle) === 'WebhookPing')!;
      const event = {
        httpMethod: 'GET',
        resource: '/api/v1/webhooks/{token}/ping',
        path: '/api/v1/webhooks/unknown-token/ping',
        pathParameters: { token: 'unknown-token' },
        headers: {},
        requestContext: {
          identity: { sourceIp: '203.0.113.9' },
          requestId: 'request',
          stage: 'prod',
          path: '/prod/api/v1/webhooks/unknown-token/ping',
        },
        body: null,
        isBase64Encoded: false,
      };
      // Asynchronous: the embedded DynamoDB answers from this process.
      const { status, stdout, stderr } = await invokeBundle(ping, 'ping', event, dirname(ping.bundleFile), {
        _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
        AWS_ENDPOINT_URL_DYNAMODB: stores.dynamodbEndpoint,
        ...ping.environment,
        LINKS_TABLE: localTableName('links'),
        COUNTERS_TABLE: localTableName('counters'),
      });
      expect(status, stderr).toBe(0);
      expect(JSON.parse(stdout)).toMatchObject({ statusCode: 404, body: JSON.stringify({ error: 'Unknown webhook link' }) });
    } finally {
      await stores.close();
    }
  }, 60_000);
});

describe('the reference pages in the bundles', () => {
  const REFERENCE_FUNCTIONS = ['PublishedDocs', 'WebhookDocs'];

  it('ships the prepared script beside the code of the reference functions only, the script the twin serves', () => {
    for (const bundle of bundles) {
      const beside = join(dirname(bundle.bundleFile), REDOC_SCRIPT_FILE);
      expect(existsSync(beside), bundle.name).toBe(REFERENCE_FUNCTIONS.includes(idOf(bundle)));
      if (!existsSync(beside)) continue;
      expect(gunzipSync(readFileSync(beside)).equals(gunzipSync(redocScript.gzip)), bundle.name).toBe(true);
      // The bundle reads the file beside it, never node_modules, which Lambda has not.
      expect(bundle.codeFiles.map((file) => readFileSync(file, 'utf8')).join('\n'), bundle.name).not.toContain(REDOC_STANDALONE_MODULE);
    }
  });

  it('answers the script from a bundle as on Lambda, read from beside index.mjs', async () => {
    const stores = await startLocalStores(scratchDir('reference-stores-'), { dynamodb: 0, s3: 0 });
    try {
      const bundle = bundles.find((candidate) => idOf(candidate) === 'WebhookDocs')!;
      const path = '/api/v1/webhooks/docs/redoc.standalone.js';
      // As the webhook API's HTTP API sends it: payload format 2.0.
      const event = {
        version: '2.0',
        routeKey: `GET ${path}`,
        rawPath: path,
        rawQueryString: `v=${redocScript.version}`,
        headers: { 'accept-encoding': 'gzip, deflate, br' },
        queryStringParameters: { v: redocScript.version },
        requestContext: {
          http: { method: 'GET', path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'test' },
          requestId: 'request',
          routeKey: `GET ${path}`,
          stage: '$default',
        },
        isBase64Encoded: false,
      };
      const { status, stdout, stderr } = await invokeBundle(bundle, 'docs-script', event, tmpdir(), {
        AWS_ENDPOINT_URL_DYNAMODB: stores.dynamodbEndpoint,
        ...bundle.environment,
        USAGE_TABLE: localTableName('usage'),
      });
      expect(status, stderr).toBe(0);
      const answer = JSON.parse(stdout) as { statusCode: number; headers: Record<string, string>; body: string; isBase64Encoded: boolean };
      expect(answer).toMatchObject({
        statusCode: 200,
        isBase64Encoded: true,
        headers: { 'content-encoding': 'gzip', 'cache-control': 'public, max-age=31536000, immutable' },
      });
      expect(gunzipSync(Buffer.from(answer.body, 'base64')).equals(gunzipSync(redocScript.gzip))).toBe(true);
    } finally {
      await stores.close();
    }
  }, 60_000);
});

describe('zod in the bundles', () => {
  it('gives the product schemas the same behaviour and English messages bundled as in the tests', async () => {
    // The schema modules bundled as a function is: were the English locale (a side effect of
    // functions/shared/zod.ts) dropped, the bundle would answer "Invalid input" where the tests expect more.
    const modules = {
      execute: 'functions/executions/execute-request.ts',
      events: 'functions/inbound/event-schema.ts',
      definitions: 'functions/workflows/definition-validation.ts',
      keys: 'functions/published/api-key-model.ts',
    };
    const dir = scratchDir('zod-probe-');
    writeFileSync(
      join(dir, 'probe.ts'),
      Object.entries(modules)
        .map(([name, path]) => `export * as ${name} from ${JSON.stringify(join(process.cwd(), path))};`)
        .join('\n'),
    );
    bundleFunction(join(dir, 'probe.ts'), join(dir, 'out'), { sdkTracing: false });
    const bundled = (await import(pathToFileURL(join(dir, 'out', 'index.mjs')).href)) as Record<
      keyof typeof modules,
      Record<string, unknown>
    >;
    const [execute, events, definitions, keys] = await Promise.all(
      Object.values(modules).map((path) => import(pathToFileURL(join(process.cwd(), path)).href) as Promise<Record<string, unknown>>),
    );
    const local = { execute: execute!, events: events!, definitions: definitions!, keys: keys! };

    const now = new Date().toISOString();
    const cases: [keyof typeof modules, string, unknown][] = [
      ['execute', 'executeRequestSchema', { user_id: 'u' }],
      [
        'execute',
        'executeRequestSchema',
        { user_id: '', thread_id: 'x'.repeat(300), input: { message: 1 }, initial_memory: [], webhook_secret: 's', overrides: { n: 1 } },
      ],
      ['execute', 'decisionRequestSchema', { feedback: 7 }],
      [
        'events',
        'callEventSchema',
        { type: 'call', external_id: 'e', occurred_at: now, audio: { url: 'u', format: 'mp3', duration_seconds: 1.5, channels: 3 } },
      ],
      ['events', 'textEventSchema', { type: 'text', external_id: 'bad id', occurred_at: '2020-01-01', messages: [] }],
      [
        'events',
        'textEventSchema',
        {
          type: 'text',
          external_id: 'e',
          occurred_at: now,
          messages: [{ text: 't', timestamp: now, author_name: 'a', author_role: 'r', extra: 1 }],
        },
      ],
      ['definitions', 'definitionSchema', { id: 'w', name: 'W', start: 'a', nodes: { a: { type: 'end', output: 1 } } }],
      [
        'definitions',
        'definitionSchema',
        {
          id: 'w!',
          name: 'x'.repeat(201),
          start: 'b',
          nodes: { a: { type: 'wait', seconds: 0, next: 'z', extra: 1 }, c: { type: 'nope' } },
        },
      ],
      ['keys', 'scopeSchema', 'workflows.write'],
      ['keys', 'scopeSchema', null],
    ];
    type Schema = { safeParse(input: unknown): { success: boolean; data?: unknown; error?: { issues: unknown } } };
    const outcome = (schema: Schema, input: unknown) => {
      const result = schema.safeParse(input);
      return result.success ? { ok: result.data } : { issues: result.error!.issues };
    };
    // definitionSchema is built per publish, for its clock.
    const schemaOf = (exported: unknown) =>
      (typeof exported === 'function'
        ? (exported as (options: object) => Schema)({ allowLoopbackTools: false, now: Date.parse('2026-11-26T00:00:00Z') })
        : exported) as Schema;
    const expected = cases.map(([module, name, input]) => outcome(schemaOf(local[module][name]), input));
    expect(cases.map(([module, name, input]) => outcome(schemaOf(bundled[module][name]), input))).toEqual(expected);
    expect(JSON.stringify(expected)).toContain('Too big: expected string to have <=200 characters');
    expect(readFileSync(join(dir, 'out', 'index.mjs'), 'utf8')).not.toContain('Eingabe');
  });
});

describe('what the bundle aliases replace', () => {
  it('bundles the real Powertools Tracer and the X-Ray SDK with sdkTracing, and refuses a context value that is not a boolean', () => {
    const entry = join(process.cwd(), 'functions/inbound/handlers/ping.ts');
    const traced = scratchDir('traced-');
    bundleFunction(entry, traced, { sdkTracing: true });
    expect(readFileSync(join(traced, 'index.mjs'), 'utf8')).toContain('AWS_XRAY_CONTEXT_MISSING');
    expect(sdkTracingOf(new App({ context: { sdkTracing: 'true' } }))).toBe(true);
    expect(sdkTracingOf(new App())).toBe(false);
    expect(() => sdkTracingOf(new App({ context: { sdkTracing: 'yes' } }))).toThrow(/sdkTracing must be true or false/);
  });

  it('compares versions as semver.gte does for the X-Ray SDK and cls-hooked', () => {
    expect(gte(process.versions.node, '8.0.0')).toBe(true);
    expect(gte('v24.1.0', '24.1.0')).toBe(true);
    expect(gte('2.10.0', '2.9.9')).toBe(true);
    expect(gte('2.2.0', '2.10.0')).toBe(false);
    expect(gte('3.0.0-beta.1', '3.0.0')).toBe(true);
    expect(gte('1.9', '2.0.0')).toBe(false);
  });

  it('takes credentials from the environment, as Lambda provides them, and fails clearly without', async () => {
    const saved = { ...process.env };
    try {
      Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'AKIDLAMBDA', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'session' });
      await expect(defaultProvider()()).resolves.toMatchObject({
        accessKeyId: 'AKIDLAMBDA',
        secretAccessKey: 'secret',
        sessionToken: 'session',
      });
      delete process.env.AWS_ACCESS_KEY_ID;
      delete process.env.AWS_SECRET_ACCESS_KEY;
      await expect(defaultProvider()()).rejects.toThrow(/environment variable credentials/);
    } finally {
      process.env = saved;
    }
  });
});

/**
 * Runs a bundle's handler once, in a process of its own, as Lambda would: the runtime's variables, the bundle's own
 * `environment`, and `extra` (the stores' endpoints, the tables); answers what the handler returned, as JSON text.
 */
async function invokeBundle(
  bundle: { bundleFile: string },
  functionName: string,
  event: object,
  cwd: string,
  extra: Record<string, string | undefined>,
): Promise<{ status: unknown; stdout: string; stderr: string }> {
  const code = `const { handler } = await import(${JSON.stringify(pathToFileURL(bundle.bundleFile).href)});
process.stdout.write(JSON.stringify(await handler(${JSON.stringify(event)}, { functionName: ${JSON.stringify(functionName)}, awsRequestId: 'request', getRemainingTimeInMillis: () => 10_000 })));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd,
    env: {
      PATH: process.env.PATH,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_LAMBDA_FUNCTION_NAME: functionName,
      AWS_EXECUTION_ENV: `AWS_Lambda_${LAMBDA_RUNTIME.name}`,
      LAMBDA_TASK_ROOT: dirname(bundle.bundleFile),
      ...extra,
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const status = await new Promise((resolve) => child.on('close', resolve));
  return { status, stdout, stderr };
}

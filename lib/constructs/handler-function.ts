import { Duration } from 'aws-cdk-lib';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const FUNCTIONS_DIR = fileURLToPath(new URL('../../functions/', import.meta.url));
const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLING_DIR = fileURLToPath(new URL('../bundling/', import.meta.url));

/**
 * Packages replaced inside Lambda bundles by what a function actually needs there (each file says why); together
 * about 470 KB less code to load per cold start. The local twin and the tests run the real packages.
 */
export const BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  zod: join(BUNDLING_DIR, 'zod-without-locales.ts'),
  '@aws-sdk/credential-provider-node': join(BUNDLING_DIR, 'lambda-credentials.ts'),
  semver: join(BUNDLING_DIR, 'semver-gte.ts'),
};

/**
 * Powertools settings every function shares. The API's webhook tokens travel in request paths, and request and
 * response bodies carry callers' data, so none of it may reach logs or traces: the Logger never logs the event,
 * and the Tracer records neither handler responses nor errors (errors are logged, with the trace id) nor
 * outgoing HTTP requests (their URLs can be callers' callback URLs, whose paths may hold secrets).
 */
export const POWERTOOLS_ENVIRONMENT: Readonly<Record<string, string>> = {
  POWERTOOLS_SERVICE_NAME: 'workflow-ingest',
  POWERTOOLS_METRICS_NAMESPACE: 'WorkflowIngest',
  POWERTOOLS_LOG_LEVEL: 'INFO',
  POWERTOOLS_LOGGER_LOG_EVENT: 'false',
  POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
  POWERTOOLS_TRACER_CAPTURE_ERROR: 'false',
  POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS: 'false',
};

export interface HandlerFunctionProps {
  /** Module under `functions/` exporting `handler`. */
  readonly handler: string;
  /** @default Duration.seconds(29), API Gateway's integration timeout */
  readonly timeout?: Duration;
  /** @default 256 */
  readonly memorySize?: number;
}

/**
 * Conventions every product function shares: newest Node runtime, arm64 (cheaper per ms), one minified ESM file
 * with only the code it reaches, Powertools settings, bounded log retention.
 */
export class HandlerFunction extends NodejsFunction {
  constructor(scope: Construct, id: string, props: HandlerFunctionProps) {
    super(scope, id, {
      entry: join(FUNCTIONS_DIR, props.handler),
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: join(PROJECT_ROOT, 'package-lock.json'),
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 256,
      timeout: props.timeout ?? Duration.seconds(29),
      tracing: Tracing.ACTIVE,
      logGroup: new LogGroup(scope, `${id}Logs`, { retention: RetentionDays.ONE_MONTH }),
      // No NODE_OPTIONS=--enable-source-maps: Node would parse the whole map on every cold start (see the source map below).
      environment: { ...POWERTOOLS_ENVIRONMENT },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node24',
        minify: true,
        // An external index.mjs.map beside the bundle, without the sources: shipped, never loaded. Node can only map
        // stack traces of modules loaded after source maps were enabled, so "only on error" is not possible; to read
        // a minified trace, map it offline, or set NODE_OPTIONS=--enable-source-maps on the function for a while.
        sourceMap: true,
        sourceMapMode: SourceMapMode.DEFAULT,
        sourcesContent: false,
        esbuildArgs: Object.fromEntries(Object.entries(BUNDLE_ALIASES).map(([name, file]) => [`--alias:${name}`, file])),
        // The SDK is bundled rather than taken from the runtime, so AWS runs the versions the tests ran.
        externalModules: [],
        mainFields: ['module', 'main'],
        banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
      },
    });
  }
}

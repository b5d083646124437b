import { AssetHashType, DockerImage, Duration } from 'aws-cdk-lib';
import { Architecture, Code, Function as LambdaFunction, LoggingFormat, SystemLogLevel, Tracing } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { bundleFunction } from '#lib/cdk/bundling/bundle.ts';
import { POWERTOOLS_ENVIRONMENT } from '#lib/cdk/powertools-environment.ts';
import { LAMBDA_NODE_MAJOR, LAMBDA_RUNTIME } from '#lib/cdk/lambda-runtime.ts';

const FUNCTIONS_DIR = fileURLToPath(new URL('../../../functions/', import.meta.url));
const PROJECT_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface HandlerFunctionProps {
  /** Module under `functions/` exporting `handler`. */
  readonly handler: string;
  /** @default Duration.seconds(29), API Gateway's integration timeout */
  readonly timeout?: Duration;
  /** @default 256 */
  readonly memorySize?: number;
  /**
   * Lambda's own lines per invocation (START, END, REPORT, about 357 bytes, billed as log ingestion): `quiet` keeps
   * only its warnings and errors (JSON log format, system log level WARN). For the webhook API's functions, whose
   * every request is a Lambda invocation: its duration and errors stay in Lambda's metrics.
   * @default 'all'
   */
  readonly platformLines?: 'all' | 'quiet';
}

/**
 * Conventions every product function shares: newest Node runtime, arm64 (cheaper per ms), minified ESM with only
 * the code it reaches and what it reaches lazily in chunks of its own (lib/cdk/bundling/bundle.ts), Powertools
 * settings, bounded log retention.
 */
export class HandlerFunction extends LambdaFunction {
  constructor(scope: Construct, id: string, props: HandlerFunctionProps) {
    const sdkTracing = sdkTracingOf(scope);
    super(scope, id, {
      code: Code.fromAsset(PROJECT_ROOT, {
        // The hash of what is deployed; bundling is skipped (and nothing hashed) where a test asks for no assets.
        assetHashType: AssetHashType.OUTPUT,
        bundling: {
          local: {
            tryBundle(outputDir) {
              bundleFunction(join(FUNCTIONS_DIR, props.handler), outputDir, { sdkTracing });
              return true;
            },
          },
          // Never pulled: the local esbuild always bundles. The command names the entry, which keeps each
          // function's asset apart in CDK's per-synthesis asset cache.
          image: DockerImage.fromRegistry(`public.ecr.aws/docker/library/node:${LAMBDA_NODE_MAJOR}`),
          command: ['bundle', props.handler],
        },
      }),
      handler: 'index.handler',
      runtime: LAMBDA_RUNTIME,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 256,
      timeout: props.timeout ?? Duration.seconds(29),
      tracing: Tracing.ACTIVE,
      ...(props.platformLines === 'quiet' ? { loggingFormat: LoggingFormat.JSON, systemLogLevelV2: SystemLogLevel.WARN } : {}),
      logGroup: new LogGroup(scope, `${id}Logs`, { retention: RetentionDays.ONE_MONTH }),
      // No NODE_OPTIONS=--enable-source-maps: Node would read and parse every map on each cold start. The maps
      // (index.mjs.map and one per chunk) are deployed beside the code, never loaded: Node only maps traces of
      // modules loaded after source maps were enabled, so "only on error" is not possible. Read a minified trace
      // with the map offline, or set NODE_OPTIONS=--enable-source-maps on a function for a while.
      environment: { ...POWERTOOLS_ENVIRONMENT, POWERTOOLS_TRACE_ENABLED: String(sdkTracing) },
    });
  }
}

/**
 * CDK context `sdkTracing` (`cdk deploy -c sdkTracing=true`): bundle Powertools Tracer for X-Ray subsegments of
 * every AWS SDK call. Off by default: Lambda's active tracing records each invocation either way
 * (lib/cdk/bundling/tracer-off.ts says what the Tracer costs).
 */
export function sdkTracingOf(scope: Construct): boolean {
  const value: unknown = scope.node.tryGetContext('sdkTracing');
  if (value === undefined || value === false || value === 'false') return false;
  if (value === true || value === 'true') return true;
  throw new Error(`CDK context sdkTracing must be true or false, got ${JSON.stringify(value)}`);
}

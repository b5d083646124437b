import { Duration } from 'aws-cdk-lib';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const FUNCTIONS_DIR = fileURLToPath(new URL('../../functions/', import.meta.url));
const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface HandlerFunctionProps {
  /** Module under `functions/` exporting `handler`. */
  readonly handler: string;
  /** @default Duration.seconds(29), API Gateway's integration timeout */
  readonly timeout?: Duration;
  /** @default 256 */
  readonly memorySize?: number;
}

/** Conventions every product function shares: newest Node runtime, arm64 (cheaper per ms), bundled ESM, Powertools settings, bounded log retention. */
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
      environment: {
        POWERTOOLS_SERVICE_NAME: 'workflow-ingest',
        POWERTOOLS_METRICS_NAMESPACE: 'WorkflowIngest',
        POWERTOOLS_LOG_LEVEL: 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
      },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node24',
        minify: true,
        sourceMap: true,
        // The SDK is bundled rather than taken from the runtime, so AWS runs the versions the tests ran.
        externalModules: [],
        mainFields: ['module', 'main'],
        banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
      },
    });
  }
}

import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { staticImports } from '#lib/cdk/bundling/bundle.ts';
import { LAMBDA_RUNTIME } from '#lib/cdk/lambda-runtime.ts';

/** One Lambda function of a synthesized cloud assembly and the code asset CDK bundled for it. */
export interface FunctionBundle {
  /** Construct path below the stack, e.g. `Api/WebhookPing`. */
  readonly name: string;
  /** `index.mjs`, the module Lambda imports. */
  readonly bundleFile: string;
  /** Every `.mjs` file of the asset: index.mjs and its chunks. */
  readonly codeFiles: readonly string[];
  /** What a cold start loads: index.mjs and the chunks it imports statically, transitively. */
  readonly bundleBytes: number;
  /** Chunks reached only through a dynamic import(), loaded when that code first runs. */
  readonly lazyBytes: number;
  /** Size of the external source maps (0 when there are none); they are deployed, not loaded. */
  readonly sourceMapBytes: number;
  /** The function's environment with every CloudFormation reference replaced by a dummy string. */
  readonly environment: Record<string, string>;
}

interface TemplateResource {
  Type: string;
  Metadata?: Record<string, unknown>;
  Properties?: { Code?: { S3Key?: unknown }; Environment?: { Variables?: Record<string, unknown> } };
}

/** The CLI records the asset directory in metadata; an in-process synthesis only names the zip (`<hash>.zip`). */
function assetDirectoryOf(resource: TemplateResource): string | undefined {
  const recorded = resource.Metadata?.['aws:asset:path'];
  if (typeof recorded === 'string') return recorded;
  const key = resource.Properties?.Code?.S3Key;
  return typeof key === 'string' && key.endsWith('.zip') ? `asset.${key.slice(0, -'.zip'.length)}` : undefined;
}

/** Reads every `*.template.json` of an assembly directory (`cdk.out`) and finds each function's `index.mjs`. */
export function listFunctionBundles(assemblyDir: string): FunctionBundle[] {
  const bundles: FunctionBundle[] = [];
  for (const file of readdirSync(assemblyDir).filter((entry) => entry.endsWith('.template.json'))) {
    const template = JSON.parse(readFileSync(join(assemblyDir, file), 'utf8')) as { Resources?: Record<string, TemplateResource> };
    for (const resource of Object.values(template.Resources ?? {})) {
      if (resource.Type !== 'AWS::Lambda::Function') continue;
      const assetPath = assetDirectoryOf(resource);
      if (assetPath === undefined) continue;
      const cdkPath = String((resource.Metadata?.['aws:cdk:path'] as string | undefined) ?? '');
      const bundleFile = join(assemblyDir, assetPath, 'index.mjs');
      if (!existsSync(bundleFile)) continue;
      const files = filesUnder(join(assemblyDir, assetPath));
      const codeFiles = files.filter((path) => path.endsWith('.mjs'));
      const eager = staticImportClosure(bundleFile);
      const bytes = (paths: Iterable<string>) => [...paths].reduce((sum, path) => sum + statSync(path).size, 0);
      bundles.push({
        name: cdkPath.split('/').slice(1, -1).join('/'),
        bundleFile,
        codeFiles,
        bundleBytes: bytes(eager),
        lazyBytes: bytes(codeFiles.filter((path) => !eager.has(path))),
        sourceMapBytes: bytes(files.filter((path) => path.endsWith('.map'))),
        environment: dummyEnvironment(resource.Properties?.Environment?.Variables ?? {}),
      });
    }
  }
  return bundles.sort((a, b) => a.name.localeCompare(b.name));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((entry) => join(dir, entry))
    .filter((path) => statSync(path).isFile());
}

/** A module and the files it imports statically, transitively: what Node loads before the handler exists. */
export function staticImportClosure(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  for (const target of staticImports(readFileSync(file, 'utf8'))) staticImportClosure(join(dirname(file), target), seen);
  return seen;
}

/** Table and bucket names, ARNs: whatever a function reads at cold start, as plausible placeholders. */
function dummyEnvironment(variables: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(variables).map(([key, value]) => {
      if (typeof value === 'string') return [key, value];
      if (key.endsWith('_ARN')) return [key, `arn:aws:states:eu-west-1:123456789012:stateMachine:dummy-${key.toLowerCase()}`];
      return [key, `dummy-${key.toLowerCase().replaceAll('_', '-')}`];
    }),
  );
}

/** Every function bundle stays under this, so a cold start loads little code. */
export const BUNDLE_BUDGET_BYTES = 500_000;

/** What Lambda sets before the module loads, plus the function's own variables (NODE_OPTIONS included). */
function lambdaEnvironment(bundle: FunctionBundle): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    AWS_REGION: 'eu-west-1',
    AWS_DEFAULT_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'AKIDUMMY',
    AWS_SECRET_ACCESS_KEY: 'dummy',
    AWS_SESSION_TOKEN: 'dummy',
    AWS_EXECUTION_ENV: `AWS_Lambda_${LAMBDA_RUNTIME.name}`,
    AWS_LAMBDA_FUNCTION_NAME: bundle.name.replaceAll('/', '-'),
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '256',
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    LAMBDA_TASK_ROOT: dirname(bundle.bundleFile),
    _HANDLER: 'index.handler',
    ...bundle.environment,
  };
}

/**
 * Imports a bundle in a fresh Node process with the environment Lambda would give it and answers the time the
 * `import()` took, in ms; throws (with the child's stderr) when it fails or exports no handler.
 */
export function importInFreshNode(bundle: FunctionBundle): number {
  const url = pathToFileURL(bundle.bundleFile).href;
  // The Lambda runtime's global for response streaming; only its presence matters at import.
  const runtimeGlobal = 'globalThis.awslambda = { streamifyResponse: (h) => h, HttpResponseStream: { from: (s) => s } };';
  const code = `${runtimeGlobal} const t0 = performance.now(); const m = await import(${JSON.stringify(url)});
const ms = performance.now() - t0; if (typeof m.handler !== 'function') throw new Error('no handler export');
process.stdout.write(String(ms));`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: dirname(bundle.bundleFile),
    env: lambdaEnvironment(bundle),
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`importing ${bundle.name} failed:\n${result.stderr}`);
  return Number(result.stdout);
}

import { buildSync, type BuildOptions, type OutputFile } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';
import { prepareRedocScript, REDOC_SCRIPT_FILE, REDOC_STANDALONE_MODULE } from '#shared/http/api-reference/redoc-standalone.ts';
import { LAMBDA_ESBUILD_TARGET } from '#lib/cdk/lambda-runtime.ts';

const BUNDLING_DIR = fileURLToPath(new URL('./', import.meta.url));

/**
 * Packages replaced inside Lambda bundles by what a function needs there (each file says why). The local twin
 * and the tests run the real packages. zod needs none: the functions use `zod/mini` (functions/shared/zod.ts),
 * from which a bundle keeps only what it calls, English messages included and no other locale.
 */
const BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  '@aws-sdk/credential-provider-node': join(BUNDLING_DIR, 'lambda-credentials.ts'),
  semver: join(BUNDLING_DIR, 'semver-gte.ts'),
};

/** Powertools Tracer replaced by a no-op unless SDK tracing is asked for (tracer-off.ts says what that costs). */
const TRACER_OFF_ALIASES: Readonly<Record<string, string>> = {
  '@aws-lambda-powertools/tracer': join(BUNDLING_DIR, 'tracer-off.ts'),
  '@aws-lambda-powertools/tracer/middleware': join(BUNDLING_DIR, 'tracer-middleware-off.ts'),
};

/**
 * The API reference pages' script (functions/shared/http/api-reference/redoc-script.ts) reads Redoc from node_modules,
 * which a Lambda bundle has not: in a bundle the module is redoc-script-beside.ts, which reads the prepared script
 * from beside index.mjs, and only a bundle that includes it gets the file (about 330 KB, never loaded as code).
 * esbuild aliases import paths, so the handlers import the module by this one.
 */
const REDOC_SCRIPT_IMPORT = '#shared/http/api-reference/redoc-script.ts';
const REDOC_SCRIPT_BESIDE = join(BUNDLING_DIR, 'redoc-script-beside.ts');

/** The files a bundle reads beside its code, by name, for the modules it includes (esbuild's inputs, from the working directory). */
function filesBeside(inputs: readonly string[]): Record<string, Buffer> {
  if (!inputs.some((input) => resolve(input) === REDOC_SCRIPT_BESIDE)) return {};
  const standalone = readFileSync(createRequire(import.meta.url).resolve(REDOC_STANDALONE_MODULE));
  return { [REDOC_SCRIPT_FILE]: prepareRedocScript(standalone) };
}

export interface BundleOptions {
  /** Bundle the real Powertools Tracer: X-Ray subsegments for every AWS SDK call, at a cold-start price. */
  sdkTracing: boolean;
}

/**
 * Minified ESM for the functions' Node.js on Lambda (../lambda-runtime.ts), the AWS SDK bundled rather than taken
 * from the runtime (AWS runs the versions the tests ran), external source maps without sources (deployed, never
 * loaded: see handler-function.ts).
 */
const COMMON: BuildOptions = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: LAMBDA_ESBUILD_TARGET,
  minify: true,
  sourcemap: 'linked',
  sourcesContent: false,
  outExtension: { '.js': '.mjs' },
  mainFields: ['module', 'main'],
  // CommonJS dependencies (the X-Ray SDK, jsonata) call require(); an ESM module has none of its own.
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  logLevel: 'warning',
  write: false,
};

/**
 * Bundles one function with the local esbuild (no Docker) into `outdir`, as `index.mjs`, the module Lambda
 * imports. Code reached only through a dynamic `import()` (the S3 client of large execution values, in
 * functions/executions/wiring.ts) can go to `chunks/`, which Node loads when that code first runs, so a cold start
 * does not parse it. Splitting has a price (code shared with a chunk is kept whole, chunks import each other),
 * so both layouts are built and the one whose cold start loads less is written.
 */
export function bundleFunction(entry: string, outdir: string, options: BundleOptions): void {
  const common: BuildOptions = {
    ...COMMON,
    alias: { ...BUNDLE_ALIASES, [REDOC_SCRIPT_IMPORT]: REDOC_SCRIPT_BESIDE, ...(options.sdkTracing ? {} : TRACER_OFF_ALIASES) },
    metafile: true,
  };
  const singleBuild = buildSync({ ...common, entryPoints: { index: entry }, outdir });
  const single = singleBuild.outputFiles ?? [];
  const split =
    buildSync({ ...common, entryPoints: { index: entry }, outdir, splitting: true, chunkNames: 'chunks/[name]-[hash]' }).outputFiles ?? [];
  const chosen = coldStartBytes(split, join(outdir, 'index.mjs')) < coldStartBytes(single, join(outdir, 'index.mjs')) ? split : single;
  for (const file of chosen) {
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.contents);
  }
  for (const [name, contents] of Object.entries(filesBeside(Object.keys(singleBuild.metafile?.inputs ?? {}))))
    writeFileSync(join(outdir, name), contents);
}

/** Bytes of `entry` and every module it imports statically, transitively, among `files`. */
function coldStartBytes(files: readonly OutputFile[], entry: string): number {
  const byPath = new Map(files.map((file) => [file.path, file]));
  const loaded = new Set<string>();
  const visit = (path: string) => {
    const file = byPath.get(path);
    if (!file || loaded.has(path)) return;
    loaded.add(path);
    for (const target of staticImports(file.text)) visit(join(dirname(path), target));
  };
  visit(entry);
  return [...loaded].reduce((sum, path) => sum + byPath.get(path)!.contents.byteLength, 0);
}

/**
 * The relative modules a bundle imports statically. esbuild writes them as `import{…}from"./chunks/x.mjs"` or
 * `import"./x.mjs"`, and dynamic ones as `import("./chunks/x.mjs")`, which are left out.
 */
export function staticImports(code: string): string[] {
  const pattern = /(?:^|[;}\s])import\s*(?:[\w$]+\s*,?\s*)?(?:\{[^}]*\}|\*\s*as\s*[\w$]+)?\s*(?:from\s*)?"(\.{1,2}\/[^"]+)"/g;
  return [...code.matchAll(pattern)].map((match) => match[1]!);
}

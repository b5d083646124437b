import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLE_BUDGET_BYTES, importInFreshNode, listFunctionBundles } from './bundle-list.ts';

/**
 * `npm run bundles [-- <cdk.out>]`: each function's bundle size (what a cold start loads: index.mjs and the chunks
 * it imports statically; "lazy" is what only a dynamic import() reaches) and the time a fresh Node process takes
 * to `import()` it (the module part of a Lambda cold start), median of BUNDLE_RUNS (default 5) runs.
 * Without a directory it runs `cdk synth` offline first (local esbuild, no Docker, no notices).
 */
const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RUNS = Number(process.env.BUNDLE_RUNS ?? 5);

function synthesize(): string {
  const outdir = mkdtempSync(join(tmpdir(), 'bundles-'));
  const result = spawnSync('npx', ['cdk', 'synth', '--no-notices', '-q', '-o', outdir], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    env: { ...process.env, CDK_DOCKER: '/bin/false', CDK_DISABLE_CLI_TELEMETRY: 'true' },
  });
  if (result.status !== 0) throw new Error(`cdk synth failed (exit ${result.status}):\n${result.stderr}`);
  return outdir;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const kb = (bytes: number) => (bytes / 1000).toFixed(0);

const assemblyDir = process.argv[2] ? resolve(process.argv[2]) : synthesize();
const bundles = listFunctionBundles(assemblyDir);
if (bundles.length === 0) throw new Error(`no function bundles in ${assemblyDir}`);

console.log(`${bundles.length} bundles in ${assemblyDir}; import time = median of ${RUNS} fresh Node ${process.version} processes`);
console.log(
  `${'function'.padEnd(32)} ${'bundle KB'.padStart(9)} ${'lazy KB'.padStart(8)} ${'map KB'.padStart(7)} ${'import ms'.padStart(9)}  NODE_OPTIONS`,
);
let over = 0;
for (const bundle of bundles) {
  const times = Array.from({ length: RUNS }, () => importInFreshNode(bundle));
  const tooBig = bundle.bundleBytes > BUNDLE_BUDGET_BYTES;
  if (tooBig) over += 1;
  console.log(
    `${bundle.name.padEnd(32)} ${kb(bundle.bundleBytes).padStart(9)} ${kb(bundle.lazyBytes).padStart(8)} ${kb(bundle.sourceMapBytes).padStart(7)} ${median(times).toFixed(1).padStart(9)}  ${bundle.environment.NODE_OPTIONS ?? ''}${tooBig ? '  over target' : ''}`,
  );
}
// A report, not a gate: test/infra/bundles.test.ts holds each function to its ceiling.
console.log(`target: every bundle under ${kb(BUNDLE_BUDGET_BYTES)} KB (1 KB = 1000 bytes); ${over} over`);

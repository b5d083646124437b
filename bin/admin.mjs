// `npm run admin`: the operator CLI (bin/admin.ts) from an esbuild bundle kept under node_modules/.cache, so no
// TypeScript is transpiled per call. The bundle is rebuilt (about a tenth of a second) whenever a source file is
// newer than it; concurrent calls each build their own copy and the last one to finish is used.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CACHE = join(ROOT, 'node_modules', '.cache', 'admin-cli');
const CURRENT = join(CACHE, 'current.json');
const SOURCES = ['bin/admin.ts', 'bin/admin.mjs', 'lib', 'functions', 'package.json', 'package-lock.json', 'tsconfig.json'];

/** The newest modification time of anything the bundle is made from. */
function newestSource() {
  let newest = 0;
  const visit = (path) => {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) return;
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
    else newest = Math.max(newest, stat.mtimeMs);
  };
  for (const source of SOURCES) visit(join(ROOT, source));
  return newest;
}

function currentBundle() {
  try {
    return JSON.parse(readFileSync(CURRENT, 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Bundled modules keep their own `import.meta.url`: the CLI finds files beside its sources (the price sheet, the
 * store's child process), which a bundle under node_modules/.cache would otherwise look for there.
 */
const sourceUrls = {
  name: 'source-urls',
  setup(build) {
    build.onLoad({ filter: /\.(ts|mjs|js|cjs)$/ }, (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta.url')) return undefined;
      return {
        contents: text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
        loader: args.path.endsWith('.ts') ? 'ts' : 'js',
      };
    });
  },
};

async function rebuild(sourcesAt) {
  const { build } = await import('esbuild');
  const name = `${Math.floor(sourcesAt)}-${process.pid}`;
  const outdir = join(CACHE, name);
  await build({
    absWorkingDir: ROOT,
    entryPoints: [join(ROOT, 'bin', 'admin.ts')],
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    // For the Node.js running this script: `npm run` makes it the project's own, the functions' major on Lambda.
    target: `node${process.versions.node.split('.')[0]}`,
    outdir,
    // The SDK bundled too: one parsed file per chunk loads faster than hundreds of small modules resolved one by one.
    external: ['esbuild', 'dynalite', 's3rver', 'aws-cdk-lib', 'constructs', 'tsx'],
    mainFields: ['module', 'main'],
    // The SDK's CommonJS parts require Node's built-ins, which an ES module bundle does through createRequire.
    banner: { js: "import { createRequire as __adminRequire } from 'node:module'; const require = __adminRequire(import.meta.url);" },
    plugins: [sourceUrls],
    logLevel: 'error',
  });
  const pointer = { dir: name, sources_at: sourcesAt };
  const written = `${CURRENT}.${process.pid}`;
  writeFileSync(written, JSON.stringify(pointer));
  renameSync(written, CURRENT);
  // Older copies go, but not one another call may be running from right now.
  for (const old of readdirSync(CACHE)) {
    const path = join(CACHE, old);
    if (old !== name && !old.startsWith('current.json') && Date.now() - statSync(path).mtimeMs > 60_000)
      rmSync(path, { recursive: true, force: true });
  }
  return pointer;
}

mkdirSync(CACHE, { recursive: true });
const sourcesAt = newestSource();
const known = currentBundle();
const bundle = known && known.sources_at >= sourcesAt ? known : await rebuild(sourcesAt);
await import(pathToFileURL(join(CACHE, bundle.dir, 'admin.js')).href);

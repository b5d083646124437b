import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RUNS = 9;
// Asynchronous: the twin these calls reach runs in this very process.
const run = promisify(execFile);

/** The median wall time of a command run `RUNS` times in a process of its own, in milliseconds. */
async function medianMs(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await run(file, args, { cwd: ROOT, env });
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(RUNS / 2)]!;
}

/**
 * The operator's wait per admin command, against the running twin of `dataDir`: the bundled CLI with and without
 * npm in front, beside Node starting and doing nothing.
 */
export async function cliBench(dataDir: string): Promise<Record<string, number>> {
  const env = { ...process.env, DATA_DIR: dataDir };
  // The first call may rebuild the bundle after a source change: not what an operator waits for each time.
  await run(process.execPath, ['bin/admin.mjs', '--help'], { cwd: ROOT, env });
  const figures = {
    node_e_0_ms: await medianMs(process.execPath, ['-e', '0'], env),
    admin_help_ms: await medianMs(process.execPath, ['bin/admin.mjs', '--help'], env),
    admin_links_list_ms: await medianMs(process.execPath, ['bin/admin.mjs', 'links', 'list', '--json'], env),
    npm_run_env_ms: await medianMs('npm', ['run', '--silent', 'env'], env),
    npm_run_admin_help_ms: await medianMs('npm', ['run', '--silent', 'admin', '--', '--help'], env),
    npm_run_admin_links_list_ms: await medianMs('npm', ['run', '--silent', 'admin', '--', 'links', 'list', '--json'], env),
  };
  const round = (ms: number) => Math.round(ms);
  console.log(`  node -e 0                          ${round(figures.node_e_0_ms)} ms (median of ${RUNS})`);
  console.log(`  admin --help                       ${round(figures.admin_help_ms)} ms`);
  console.log(`  admin links list --json            ${round(figures.admin_links_list_ms)} ms (the running twin's stores)`);
  const times = (ms: number) => (ms / figures.npm_run_env_ms).toFixed(2);
  console.log(`  npm run --silent env                ${round(figures.npm_run_env_ms)} ms (npm's own start)`);
  console.log(
    `  npm run --silent admin -- --help   ${round(figures.npm_run_admin_help_ms)} ms (${times(figures.npm_run_admin_help_ms)}x npm's start)`,
  );
  console.log(
    `  npm run ... links list --json      ${round(figures.npm_run_admin_links_list_ms)} ms (${times(figures.npm_run_admin_links_list_ms)}x npm's start)`,
  );
  return figures;
}

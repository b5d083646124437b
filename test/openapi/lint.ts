import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { servedDocuments } from './served-documents.ts';

/**
 * `npm run lint:openapi`: writes every OpenAPI document the APIs serve (both APIs, 3.2 and 3.1) and lints them with
 * Redocly's CLI (redocly.yaml: every recommended rule an error) and Spectral's (spectral.yaml: its OpenAPI rules, no
 * warning allowed). Offline: no telemetry, no update check, and Spectral's ruleset is built into its CLI.
 */
const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
try {
  const files = servedDocuments().map(({ name, document }) => {
    const file = join(dir, name);
    writeFileSync(file, JSON.stringify(document, null, 2));
    return file;
  });
  const resolve = createRequire(import.meta.url).resolve;
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
  const redocly = spawnSync(
    process.execPath,
    [resolve('@redocly/cli/bin/cli.js'), 'lint', '--config', new URL('../../redocly.yaml', import.meta.url).pathname, ...files],
    {
      stdio: 'inherit',
      env,
    },
  );
  const spectral = spawnSync(
    process.execPath,
    [
      resolve('@stoplight/spectral-cli/dist/index.js'),
      'lint',
      '--ruleset',
      new URL('spectral.yaml', import.meta.url).pathname,
      '--fail-severity',
      'warn',
      ...files,
    ],
    { stdio: 'inherit', env },
  );
  process.exitCode = redocly.status === 0 && spectral.status === 0 ? 0 : 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}

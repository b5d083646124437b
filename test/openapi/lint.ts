import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { webhookApiDocument } from '#inbound/openapi.ts';
import { publishedApiDocument } from '#published/openapi.ts';

/**
 * `npm run lint:openapi`: writes both OpenAPI documents as the API serves them and lints them with Redocly's CLI
 * (redocly.yaml: every recommended rule an error). Offline: no telemetry, no update check.
 */
const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
try {
  const files = [
    ['published.json', publishedApiDocument()],
    ['webhooks.json', webhookApiDocument()],
  ].map(([name, document]) => {
    const file = join(dir, name as string);
    writeFileSync(file, JSON.stringify(document, null, 2));
    return file;
  });
  const cli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');
  const config = new URL('../../redocly.yaml', import.meta.url).pathname;
  const result = spawnSync(process.execPath, [cli, 'lint', '--config', config, ...files], {
    stdio: 'inherit',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}

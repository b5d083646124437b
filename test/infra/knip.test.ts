import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT as ROOT } from '../support/repository-files.ts';

/**
 * knip.jsonc, as `npm test` runs it (`npm run knip`), on a small project laid out like this one: an unused export
 * and a package used without being declared fail it, and the same project with neither passes.
 */
let root: string;

function write(files: Record<string, string>) {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

function knip() {
  const run = spawnSync(process.execPath, [join(root, 'node_modules/knip/bin/knip.js'), '--reporter', 'json'], {
    cwd: root,
    encoding: 'utf8',
  });
  const { issues } = JSON.parse(run.stdout) as { issues: { file: string; exports: { name: string }[]; unlisted: { name: string }[] }[] };
  const found = issues.flatMap((issue) => [
    ...issue.exports.map((entry) => `${issue.file}: unused export ${entry.name}`),
    ...issue.unlisted.map((entry) => `${issue.file}: undeclared ${entry.name}`),
  ]);
  return { status: run.status, found };
}

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'knip-')));
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  copyFileSync(join(ROOT, 'knip.jsonc'), join(root, 'knip.jsonc'));
  write({
    'package.json': JSON.stringify({ name: 'fixture', private: true, type: 'module' }),
    'bin/app.ts': "import { used } from '../lib/part.ts';\nimport { z } from 'zod';\nconsole.log(used, z);\n",
    'lib/part.ts': 'export const used = 1;\nexport const unused = 2;\n',
  });
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('knip.jsonc', () => {
  it('fails on an unused export and on a package used but not declared', () => {
    expect(knip()).toEqual({ status: 1, found: ['bin/app.ts: undeclared zod', 'lib/part.ts: unused export unused'] });
  });

  it('passes the same project with the package declared and the export gone', () => {
    write({
      'package.json': JSON.stringify({ name: 'fixture', private: true, type: 'module', dependencies: { zod: '*' } }),
      'lib/part.ts': 'export const used = 1;\n',
    });
    expect(knip()).toEqual({ status: 0, found: [] });
  });
});

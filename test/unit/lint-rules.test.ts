import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint, type Linter } from 'eslint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT as ROOT } from '../support/repository-files.ts';

/**
 * eslint.config.js's import and line-width rules, run on a small project laid out like this one (its package.json
 * `#…` imports and biome.json width copied), so each rule is seen to fail: a rule that silently resolves nothing
 * would pass on the real tree too.
 */
const { importRules } = (await import(pathToFileURL(join(ROOT, 'eslint.config.js')).href)) as {
  importRules: (root: string) => Linter.Config[];
};
const WIDTH = (JSON.parse(readFileSync(join(ROOT, 'biome.json'), 'utf8')) as { formatter: { lineWidth: number } }).formatter.lineWidth;

const FILES: Record<string, string> = {
  // An upward import through an alias, and a legal one.
  'functions/shared/upward.ts': "import { b } from '#engine/cycle-b.ts';\nexport const up = b;\n",
  'functions/engine/legal.ts':
    "import { up } from '#shared/upward.ts';\nimport { task } from '../routes.ts';\nexport const ok = [up, task];\n",
  // A cycle closed by a lazy import, and a type-only import back, which is no cycle.
  'functions/engine/cycle-a.ts': "export const a = async () => (await import('#engine/cycle-b.ts')).b;\n",
  'functions/engine/cycle-b.ts': "import { a } from './cycle-a.ts';\nexport const b = a;\n",
  'functions/engine/typed.ts': "import type { T } from './typed-back.ts';\nexport const t: T | undefined = undefined;\n",
  'functions/engine/typed-back.ts': "import { t } from './typed.ts';\nexport type T = string;\nexport const back = t;\n",
  'functions/routes.ts': "import { up } from '#shared/upward.ts';\nexport const task = up;\n",
  // Outside functions/, a handler imported, wiring below a handler.
  'functions/workflows/outside.ts': "import { twin } from '#lib/twin/twin.ts';\nexport const o = twin;\n",
  'functions/workflows/handlers/list.ts': "import { deps } from '../wiring.ts';\nexport const handler = deps;\n",
  'functions/workflows/uses-handler.ts': "import { handler } from './handlers/list.ts';\nexport const u = handler;\n",
  'functions/workflows/wiring.ts': 'export const deps = 1;\n',
  'functions/workflows/workflows-service.ts': "import { deps } from './wiring.ts';\nexport const service = deps;\n",
  'functions/workflows/workflows-repository.ts': "import { service } from './workflows-service.ts';\nexport const repo = 1;\n",
  'functions/workflows/list-route.ts': "import { deps } from './wiring.ts';\nexport const route = deps;\n",
  'functions/engine/step-wiring.ts': 'export const step = 1;\n',
  'functions/engine/handlers/step.ts': "import { step } from '../step-wiring.ts';\nexport const handler = step;\n",
  'functions/engine/nodes/deep.ts': "import { step } from '#engine/step-wiring.ts';\nexport const deep = step;\n",
  // The products of lib/.
  'lib/twin/twin.ts': "import { stack } from '#lib/cdk/stack.ts';\nexport const twin = stack;\n",
  'lib/cdk/stack.ts': `export const stack = '${'x'.repeat(WIDTH)}';\n// ${'y'.repeat(WIDTH - 2)}\n`,
  'lib/client/client.ts': "import { twin } from '../twin/twin.ts';\nexport const c = twin;\n",
  'bin/app.ts': `export const app = '${'z'.repeat(WIDTH - 22)}';\n`,
};

let root: string;
let found: string[];

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'lint-rules-')));
  const { imports } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { imports: Record<string, string> };
  const files: Record<string, string> = {
    ...FILES,
    'package.json': JSON.stringify({ type: 'module', imports }),
    'biome.json': JSON.stringify({ formatter: { lineWidth: WIDTH } }),
    'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', allowImportingTsExtensions: true, noEmit: true } }),
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  const eslint = new ESLint({ cwd: root, overrideConfigFile: true, overrideConfig: importRules(root) });
  const results = await eslint.lintFiles(['bin', 'lib', 'functions']);
  found = results.flatMap((result) =>
    result.messages.map((message) => `${result.filePath.slice(root.length + 1)}:${message.line} ${message.ruleId ?? message.message}`),
  );
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the lint rules of eslint.config.js', () => {
  it('report each cycle, upward import and over-wide line of the fixture, and nothing else', () => {
    expect(found.sort()).toEqual(
      [
        // The cycle, seen from both ends, the lazy import included; the type-only one is not reported.
        'functions/engine/cycle-a.ts:1 import-x/no-cycle',
        'functions/engine/cycle-b.ts:1 import-x/no-cycle',
        // An area importing one above it through `#engine/…`; functions/ importing lib/.
        'functions/shared/upward.ts:1 import-x/no-restricted-paths',
        'functions/workflows/outside.ts:1 import-x/no-restricted-paths',
        // A handler imported; a repository importing a service; a service and a module deeper down importing wiring.
        'functions/workflows/uses-handler.ts:1 import-x/no-restricted-paths',
        'functions/workflows/workflows-repository.ts:1 import-x/no-restricted-paths',
        'functions/workflows/workflows-service.ts:1 import-x/no-restricted-paths',
        'functions/engine/nodes/deep.ts:1 import-x/no-restricted-paths',
        // lib/twin may not import the stack, lib/client nothing outside itself.
        'lib/twin/twin.ts:1 import-x/no-restricted-paths',
        'lib/client/client.ts:1 import-x/no-restricted-paths',
        // A string and a comment over the width; a line at it (bin/app.ts) passes.
        'lib/cdk/stack.ts:1 max-len',
        'lib/cdk/stack.ts:2 max-len',
      ].sort(),
    );
  });
});

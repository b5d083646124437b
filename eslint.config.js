// @ts-check
import { readFileSync } from 'node:fs';
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

/**
 * Type-aware linting of bin, lib, functions and test (everything tsconfig.json includes); `npm test` runs it.
 * The layers (which folder may import which), cycles and the line width are lint rules here, so the editor shows
 * them; test/unit/layers.test.ts keeps what an import rule cannot say, test/unit/lint-rules.test.ts shows these bite.
 */

/** What each area of functions/ may import besides itself; `.` is functions/*.ts, the route and task tables. */
const AREAS = {
  shared: [],
  workflows: ['shared'],
  executions: ['shared', 'workflows'],
  engine: ['shared', 'workflows', 'executions', '.'],
  inbound: ['shared', '.'],
  collection: ['shared', 'inbound', '.'],
  published: ['shared', 'workflows', 'executions', '.'],
  '.': ['shared'],
};

/** What each product of lib/ may not import (globs in lib/): the others beside it, and the CDK's own parts. */
const PRODUCTS = {
  cdk: ['twin/**', 'admin/**', 'pricing/**'],
  twin: ['admin/**', 'pricing/**', 'cdk/constructs/**', 'cdk/bundling/**', 'cdk/@(stack).ts'],
  pricing: ['twin/**', 'admin/**'],
  admin: ['cdk/constructs/**', 'cdk/bundling/**'],
};

/** `wiring.ts`, or `<part>-wiring.ts` where one area wires functions with very different needs (the step function). */
const WIRING = '?(+([a-z])-)wiring';
/** Handlers, the factories that build them (`*-route.ts`, `*-stack.ts`) and wiring: the only places that wire. */
const NOT_WIRING_SIDE = `!(*-route|*-stack|${WIRING}).ts`;

/**
 * The import rules, for the project at `root` (a parameter so that a test can run them on a fixture). Imports
 * resolve as tsc and Node resolve them (package.json's `#…` imports, `.ts` extensions), so a cycle or a wrong
 * import through an alias shows; a dynamic `import()` counts as much as a static one, an `import type` does not
 * count for cycles.
 * @param {string} root
 * @returns {import('eslint').Linter.Config[]}
 */
export function importRules(root) {
  const under = (/** @type {string[]} */ ...globs) => globs.map((glob) => `${root}/${glob}`);
  const area = (/** @type {string} */ name) => (name === '.' ? 'functions/*.ts' : `functions/${name}/**`);
  const zones = [
    ...Object.entries(AREAS).map(([name, allowed]) => ({
      target: under(area(name)),
      from: under(
        ...Object.keys(AREAS)
          .filter((other) => other !== name && !allowed.includes(other))
          .map(area),
      ),
      message: `An area imports only itself and the areas below it: ${area(name)} may import ${allowed.join(', ') || 'nothing else'}.`,
    })),
    {
      target: under('functions/**'),
      from: under('**'),
      except: under('functions/**', 'node_modules/**'),
      message: 'functions/ imports nothing of the project outside itself.',
    },
    { target: under('functions/**'), from: under('functions/*/handlers/**'), message: 'Handlers are entry points only.' },
    {
      target: under('functions/**/*-repository.ts', 'functions/shared/clients/**'),
      from: under('functions/**/*-service.ts'),
      message: 'Repositories and clients sit below services.',
    },
    {
      target: under('functions/*.ts', `functions/*/${NOT_WIRING_SIDE}`, `functions/*/!(handlers)/**/${NOT_WIRING_SIDE}`),
      from: under(`functions/**/${WIRING}.ts`),
      message: 'Only handlers, *-route.ts, *-stack.ts and wiring import wiring.',
    },
    ...Object.entries(PRODUCTS).map(([product, forbidden]) => ({
      target: under(`lib/${product}/**`),
      from: under(...forbidden.map((part) => `lib/${part}`)),
      message: `lib/${product} may not import lib/${forbidden.join(', lib/')}.`,
    })),
    {
      target: under('lib/client/**'),
      from: under('**'),
      except: under('lib/client/**', 'node_modules/**'),
      message: 'What callers copy imports nothing of the product but its own generated types.',
    },
  ];
  return [
    {
      files: ['**/*.ts'],
      languageOptions: { parser: tseslint.parser },
      plugins: { 'import-x': importX },
      settings: {
        // The modules the rules follow (a cycle runs through files of these kinds only), and how to read them.
        'import-x/extensions': ['.ts', '.mjs', '.js'],
        'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
        'import-x/resolver-next': [createTypeScriptImportResolver({ project: `${root}/tsconfig.json` })],
      },
      rules: {
        'import-x/no-cycle': ['error', { ignoreExternal: true }],
        'import-x/no-restricted-paths': ['error', { basePath: root, zones }],
      },
    },
    {
      // The formatter keeps code within its width but leaves long strings and comments as they are.
      files: ['bin/**/*.ts', 'bin/**/*.mjs', 'lib/**/*.ts', 'functions/**/*.ts'],
      ignores: ['**/*.d.ts'],
      rules: { 'max-len': ['error', { code: lineWidth(root) }] },
    },
  ];
}

/** The width of a product line, biome.json's: max-len (in ESLint until its 11.0) holds strings and comments to it. */
function lineWidth(/** @type {string} */ root) {
  return JSON.parse(readFileSync(`${root}/biome.json`, 'utf8')).formatter.lineWidth;
}

export default defineConfig(
  globalIgnores(['cdk.out/', 'node_modules/', '.local/', 'coverage/']),

  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The promise rules are the reason for type-aware linting here (all three are in recommendedTypeChecked too).
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // Relaxed: a `_` prefix marks a deliberately unused name (a signature to match, a property left out of a rest).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // Off: `async` without `await` is how fakes, middy hooks and close() meet a Promise-returning interface, and it
      // turns a throw into a rejection; the promise rules above catch the mistakes that matter.
      '@typescript-eslint/require-await': 'off',
    },
  },

  ...importRules(import.meta.dirname),

  {
    files: ['test/**/*.ts'],
    rules: {
      // Off in tests: they read JSON response bodies as `Record<string, any>` and reach into them freely; a type per
      // body would be noise, and a wrong guess fails the test's own assertions anyway.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },

  // This file itself: plain JavaScript outside tsconfig.json's project, so no type-aware rules.
  { files: ['eslint.config.js'], extends: [js.configs.recommended] },
);

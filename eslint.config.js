// @ts-check
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

/**
 * Type-aware linting of bin, lib, functions and test (everything tsconfig.json includes). `npm test` runs it first.
 * Layering (which directory may import which) is guarded by test/unit/layers.test.ts, not here.
 */
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

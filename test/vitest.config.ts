import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Vitest's default leaves one core free (one file at a time on 2 cores), but the e2e files spend most of their
    // time waiting on their twins (streams, timers, child processes): two files at a time keep both cores busy.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 30_000,
    // `npm run test:unit` turns it on (`--coverage`): the product's lines its two pure tiers run, all product files
    // counted (an untested one as 0%), held to a floor just under today's figure so that it only goes up.
    coverage: {
      provider: 'v8',
      include: ['bin/**/*.ts', 'lib/**/*.ts', 'functions/**/*.ts'],
      exclude: ['**/*.d.ts'],
      reporter: ['text-summary'],
      reportOnFailure: true,
      thresholds: { statements: 40, branches: 37, functions: 38, lines: 40 },
    },
    hookTimeout: 60_000,
    env: {
      POWERTOOLS_METRICS_DISABLED: 'true',
      // The tests host the twin: no X-Ray context tracking (async hooks) in their process, as lib/twin/untraced-process.ts.
      AWS_XRAY_MANUAL_MODE: '1',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      CDK_DISABLE_CLI_TELEMETRY: 'true',
    },
  },
});

import { defineConfig } from 'vitest/config';

/**
 * Three projects, so that what needs no service runs without one: `npm run test:unit` runs only the first, in seconds.
 * A project's global setup runs only when one of its files is picked, so `npx vitest run test/unit/x.test.ts` or
 * `test/workflows/x.test.ts` starts no database, no Temporal dev server and no sandbox; `npm test` runs all three once.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    // Two cores: run two files at a time; each brings its own worker and task queue.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      // Pure code, configuration, files of the repository: no service at all.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      // Workflows on the time-skipping test server each file starts for itself (test/support/time-skipping.ts).
      { extends: true, test: { name: 'workflows', include: ['test/workflows/**/*.test.ts'], setupFiles: ['test/support/quiet-runtime.ts'] } },
      // A fresh database, one Temporal dev server and the sandbox for the whole run (test/global-setup.ts).
      {
        extends: true,
        test: {
          name: 'services',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          setupFiles: ['test/support/quiet-runtime.ts'],
        },
      },
    ],
  },
});

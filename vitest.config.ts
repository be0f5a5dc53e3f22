import { defineConfig } from 'vitest/config';

/**
 * Two projects: `unit` runs in this process's workers alone (no child process, task thread or
 * socket to another process) and takes seconds: `npx vitest --project unit`; `cluster` starts
 * processes (LocalCluster, spawn, network namespaces) or talks to the services of the
 * connector tests (Redis, PostgreSQL: test/helpers/services.ts). `npm test` runs both.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 60_000, hookTimeout: 30_000 },
      },
      {
        extends: true,
        test: { name: 'cluster', include: ['test/cluster/**/*.test.ts'], testTimeout: 60_000, hookTimeout: 60_000 },
      },
    ],
  },
});

import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The cluster files that run longest, by the start of their names. vitest starts the files it has
 * no durations for (a fresh clone) largest first, and these are small (their tests are in
 * test/helpers/ha.ts and exactlyOnce.ts): started last, one of them would end the run alone.
 */
const LONGEST = ['ha-', 'exactly-once-', 'threads.', 'failover.', 'cluster.', 'package.'];

/** vitest's order (cluster files before unit ones, by cached duration or size), the longest files of LONGEST moved first. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification): number => {
      const at = LONGEST.findIndex((start) => path.basename(file.moduleId).startsWith(start));
      return at === -1 ? LONGEST.length : at;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

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
    sequence: { sequencer: LongestFirst },
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

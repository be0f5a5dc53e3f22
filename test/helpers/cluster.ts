import { test } from 'vitest';
import { LocalCluster } from '../../src/cli/LocalCluster.js';
import type { LocalClusterOptions } from '../../src/cli/LocalClusterOptions.js';
import { expectTaskManagersIdle } from './jobs.js';

export interface ClusterFixtureOptions {
  /**
   * At the file's end, before the stop: every TaskManager holds no partition, spill file or
   * buffer. For files whose jobs all end on a live cluster (a kill leaves a TaskManager listed
   * that no longer answers).
   */
  leakCheck?: boolean;
}

/** Whether every process of the cluster has exited (a test may stop it itself). */
function stopped(cluster: LocalCluster): boolean {
  return cluster.processes.every((p) => p.exitCode !== null || p.signalCode !== null);
}

/**
 * vitest's `test` with a `cluster`: one LocalCluster of `options` (children's output ignored
 * unless given) for the whole file, started where a test or a suite hook first asks for it,
 * and stopped when the file ends, however it ends. A hook sets the file up from it:
 *
 *   const test = clusterTest({ taskManagers: 2, slots: 2 });
 *   test.beforeAll(({ cluster }) => { url = cluster.url; });
 */
export function clusterTest(options: LocalClusterOptions, { leakCheck = false }: ClusterFixtureOptions = {}) {
  // eslint-disable-next-line no-empty-pattern -- vitest reads a fixture's dependencies from this pattern: none
  return test.extend('cluster', { scope: 'file' }, async ({}, { onCleanup }) => {
    const cluster = new LocalCluster({ stdio: 'ignore', ...options });
    onCleanup(async () => {
      try {
        if (leakCheck && cluster.url !== '' && !stopped(cluster)) await expectTaskManagersIdle(cluster.url);
      } finally {
        await cluster.stop();
      }
    });
    await cluster.start();
    return cluster;
  });
}

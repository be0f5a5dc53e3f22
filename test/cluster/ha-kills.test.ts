/**
 * High availability (issue 39), the leader killed: two JobManagers of one cluster elect their
 * leader in PostgreSQL; a streaming job (Redis Streams in, a running count per key inserted
 * into PostgreSQL with checkpoints every 500 ms) runs through three SIGKILLs of its leader, a
 * restarted one joining as standby each time. The job never fails, and each key's committed
 * counts are 1..n, each once. The other HA tests are the files ha-*.test.ts beside this one
 * (one test a file: they run side by side); what they share is test/helpers/ha.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { JobState } from '../../src/lifecycle/JobState.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { eventually } from '../helpers/eventually.js';
import { killHard } from '../helpers/failover.js';
import { awaitCheckpoint, awaitLeader, awaitRunning, expectExactlyOnce, expectRunning, haCluster, haTest as test, roles, startCounting } from '../helpers/ha.js';

test('the leader SIGKILLed three times mid-job, a restarted one joining as standby each time: a new leader takes over, the job never fails, every count is committed once', async ({ redis, postgres, onTestFinished }) => {
  const cluster = await haCluster(postgres.url, onTestFinished);
  const { id, producer } = await startCounting(cluster, redis, postgres);
  const savepoints = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-ha-savepoints-'));
  onTestFinished(() => fs.rmSync(savepoints, { recursive: true, force: true }));
  try {
    let leader = await awaitLeader(cluster);
    for (let kill = 0; kill < 3; kill++) {
      await awaitCheckpoint(cluster.jobManagerUrls[leader], id);
      // Before the last kill a savepoint is asked for: the new leader knows it completed, or says it failed with the change.
      const savepoint = kill === 2 ? (await callJson<{ id: number }>('POST', `${cluster.jobManagerUrls[leader]}/jobs/${id}/savepoints`, { directory: savepoints })).id : undefined;
      const killed = Date.now();
      await killHard(cluster.jobManagerProcess(leader));
      const next = await awaitLeader(cluster, leader);
      console.log(`kill ${kill + 1}: jobmanager ${next} leads ${Date.now() - killed} ms after the leader's SIGKILL`);
      if (savepoint !== undefined) {
        const status = await callJson<{ status: string; code?: string }>('GET', `${cluster.jobManagerUrls[next]}/jobs/${id}/savepoints/${savepoint}`);
        expect(status.status === 'COMPLETED' || status.code === 'SPW_ERR_LEADER_CHANGED', JSON.stringify(status)).toBe(true);
      }
      await cluster.restartHaJobManager(leader);
      expect((await roles(cluster.jobManagerUrls[leader])).role).toBe('standby');
      leader = next;
      await awaitRunning(cluster.jobManagerUrls[leader], id);
    }
    await awaitCheckpoint(cluster.jobManagerUrls[leader], id);
    await producer.stop();
    await expectExactlyOnce(postgres, producer, id);
    await expectRunning(cluster.jobManagerUrls[leader], id);
    // Canceled, the job has its result in the store, and nothing else of it is left there.
    await callJson('POST', `${cluster.jobManagerUrls[leader]}/jobs/${id}/cancel`, {});
    const results = await eventually(
      `job ${id}: its result in the HA store after its cancel`,
      async () => {
        const { rows } = await postgres.client.query('SELECT state FROM spillway_ha_results WHERE job_id = $1', [id]);
        return rows.length > 0 && rows;
      },
      { timeoutMs: 20_000, everyMs: 100 },
    );
    expect(results).toEqual([{ state: JobState.CANCELED }]);
    expect((await postgres.client.query('SELECT 1 FROM spillway_ha_jobs WHERE job_id = $1', [id])).rowCount).toBe(0);
    // A savepoint's record stays: it is the user's.
    expect((await postgres.client.query('SELECT 1 FROM spillway_ha_checkpoints WHERE job_id = $1 AND NOT savepoint', [id])).rowCount).toBe(0);
  } finally {
    await producer.stop();
  }
}, 120_000);

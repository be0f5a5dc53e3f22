/**
 * High availability (issue 39), chaos: a streaming exactly-once job (Redis Streams in, a
 * running count per key inserted into PostgreSQL, checkpoints every 500 ms) while the
 * leading JobManager and a TaskManager are SIGKILLed in turn, three times each, a
 * replacement started after each kill. The job never fails, every count is committed
 * once, and once it is canceled no task runs anywhere, the store keeps only its result,
 * and every process the test started has exited, whatever happened.
 */
import type { ChildProcess } from 'node:child_process';
import { expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { JobState } from '../../src/lifecycle/JobState.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import type { TaskManagerStatus } from '../../src/rpc/ControlPlane.js';
import { eventually } from '../helpers/eventually.js';
import { killHard } from '../helpers/failover.js';
import { awaitCheckpoint, awaitLeader, awaitRunning, completedCheckpoints, expectExactlyOnce, expectRunning, haCluster, haTest, startCounting } from '../helpers/ha.js';
import { taskManagers, waitFor } from '../helpers/jobs.js';

const ROUNDS = 6;

/** The TaskManager processes of the cluster still alive. */
function liveTaskManagers(cluster: LocalCluster): ChildProcess[] {
  const jobManagers = new Set([0, 1].map((i) => cluster.jobManagerProcess(i)));
  return cluster.processes.filter((p) => !jobManagers.has(p) && p.exitCode === null && p.signalCode === null);
}

/** The statuses of the TaskManagers the leader at `url` lists. */
async function statuses(cluster: LocalCluster, url: string): Promise<TaskManagerStatus[]> {
  // Lets this process call the TaskManagers listed (with the cluster's token).
  await cluster.waitForTaskManagers(0);
  return Promise.all((await taskManagers(url)).map((tm) => callJson<TaskManagerStatus>('GET', `http://${tm.host}:${tm.httpPort}/status`)));
}

haTest('chaos: the leader and a TaskManager SIGKILLed in turn, three times each: the job never fails, every count is committed once, nothing is left running', async ({ redis, postgres, onTestFinished }) => {
  const cluster = await haCluster(postgres.url, onTestFinished);
  const { id, producer } = await startCounting(cluster, redis, postgres);
  onTestFinished(() => producer.stop());
  let leader = await awaitLeader(cluster);
  for (let round = 0; round < ROUNDS; round++) {
    const url = cluster.jobManagerUrls[leader];
    // Each kill hits a job that restored from a checkpoint and completed one since.
    await awaitCheckpoint(url, id, await completedCheckpoints(url, id));
    if (round % 2 === 0) {
      await killHard(cluster.jobManagerProcess(leader));
      const next = await awaitLeader(cluster, leader);
      await cluster.restartHaJobManager(leader);
      leader = next;
    } else {
      const live = liveTaskManagers(cluster);
      const victim = live[round % live.length];
      const pids = (await statuses(cluster, url)).map((s) => s.pid);
      expect(pids).toContain(victim.pid);
      await killHard(victim);
      const replacement = cluster.addTaskManager(cluster.spillDirOf.get(victim));
      await eventually(
        'the replacement TaskManager registered with the leader',
        async () => (await statuses(cluster, url).catch(() => [])).some((s) => s.pid === replacement.pid),
        { timeoutMs: 60_000, everyMs: 100 },
      );
    }
    await awaitRunning(cluster.jobManagerUrls[leader], id);
  }
  const url = cluster.jobManagerUrls[leader];
  await awaitCheckpoint(url, id, await completedCheckpoints(url, id));
  await producer.stop();
  await expectExactlyOnce(postgres, producer, id);
  await expectRunning(url, id);

  await callJson('POST', `${url}/jobs/${id}/cancel`, {});
  expect((await waitFor(url, id, 30_000)).state).toBe(JobState.CANCELED);
  // No TaskManager runs a task of it, those that replaced the killed ones included.
  await eventually('no TaskManager runs a task', async () => (await statuses(cluster, url)).every((s) => s.tasks.length === 0), { timeoutMs: 30_000, everyMs: 100 });
  expect(liveTaskManagers(cluster)).toHaveLength(2);
  // The store keeps its result alone: no job row and no checkpoint pointer of it.
  await eventually('the job has its result in the HA store', async () => (await postgres.client.query('SELECT 1 FROM spillway_ha_results WHERE job_id = $1', [id])).rowCount === 1, 20_000);
  expect((await postgres.client.query('SELECT 1 FROM spillway_ha_jobs WHERE job_id = $1', [id])).rowCount).toBe(0);
  expect((await postgres.client.query('SELECT 1 FROM spillway_ha_checkpoints WHERE job_id = $1', [id])).rowCount).toBe(0);
  // None is stuck: each process still alive stops on SIGTERM, within the grace before a SIGKILL (haCluster stops the cluster on failure).
  const alive = cluster.processes.filter((p) => p.exitCode === null && p.signalCode === null);
  expect(alive).toHaveLength(4);
  await cluster.stop();
  expect(alive.map((p) => p.signalCode === 'SIGKILL')).toEqual(alive.map(() => false));
}, 300_000);

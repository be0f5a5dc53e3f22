import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { killHard, readTextOutput, writeWords } from '../helpers/failover.js';
import { eventually, sleep } from '../helpers/eventually.js';
import { expectCounts, expectTaskManagersIdle, type JobStatus, referenceCount, result, submitJob, type TaskManagerEntry, taskManagers, waitFor } from '../helpers/jobs.js';

const JOBS = 12;
const KILL_EVERY_MS = 2500;
const SYNTHETIC_RECORDS = 200_000;
let cluster: LocalCluster;
let url: string;
let work: string;
let corpus: string;
let reference: Map<string, number>;
let killer: NodeJS.Timeout | null = null;

const test = clusterTest({
  taskManagers: 3,
  slots: 2,
  memory: '64mb',
  heartbeatTimeoutMs: 8000,
  // Enough restarts that a job slowed by a loaded machine outlives several kills.
  jobManagerArgs: ['--restart-attempts', '10', '--restart-delay', '200'],
});

test.beforeAll(({ cluster: started }) => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-chaos-'));
  corpus = path.join(work, 'corpus');
  writeWords(corpus, 4, 10_000, 2000, 11);
  reference = referenceCount(corpus);
  cluster = started;
  url = cluster.url;
}, 60_000);

afterAll(async () => {
  if (killer) clearInterval(killer);
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

const killed: ChildProcess[] = [];
let seed = 12345;
const random = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);

/** The replacement of the last kill until it has registered: no kill comes before it, however slow a loaded machine makes it. */
let replacing: Promise<void> | null = null;

/**
 * Kills a random live TaskManager (seeded) and starts another on the folder it could not clean, which empties it;
 * nothing while the replacement of the kill before has not registered (the cluster is never down two).
 */
function killOne(): void {
  if (replacing !== null) return;
  const live = cluster.processes.slice(1).filter((p) => p.exitCode === null && p.signalCode === null);
  if (live.length === 0) return;
  const victim = live[random() % live.length];
  killed.push(victim);
  replacing = (async () => {
    await killHard(victim);
    const replacement = cluster.addTaskManager(cluster.spillDirOf.get(victim));
    await eventually('the replacement TaskManager registered', async () => {
      // Lets this process call the TaskManagers listed (with the cluster's token).
      await cluster.waitForTaskManagers(0);
      const pids = await Promise.all((await taskManagers(url)).map((tm) => callJson<{ pid: number }>('GET', `http://${tm.host}:${tm.httpPort}/status`).then((s) => s.pid, () => 0)));
      return pids.includes(replacement.pid!) || replacement.exitCode !== null;
    }, { timeoutMs: 120_000, everyMs: 100 });
  })().finally(() => (replacing = null));
}

/**
 * One kill every KILL_EVERY_MS, and one during every third job, at a seeded moment of
 * its first 300 ms: on a fast machine the jobs take a few seconds, and the
 * timer alone could miss them.
 */
async function submitUnderFire(i: number, body: Record<string, unknown>): Promise<string> {
  const id = await submitJob(url, body);
  if (i % 3 === 1) {
    await sleep(random() % 300);
    // This kill is never skipped: it waits for the replacement of the one before (the timer's skip instead).
    while (replacing !== null) await replacing;
    killOne();
  }
  return id;
}

/**
 * The TaskManagers, once the JobManager lists `count` and every one answers: the last
 * kill may come after the last job, and a killed TaskManager that no job touched stays
 * listed until its heartbeats time out.
 */
async function liveTaskManagers(count: number): Promise<TaskManagerEntry[]> {
  let seen = '';
  return eventually(
    () => `the JobManager lists ${count} TaskManagers, all live (${seen})`,
    async () => {
      // Lets this process call the TaskManagers listed (with the cluster's token).
      await cluster.waitForTaskManagers(count);
      const listed = await taskManagers(url);
      const answers = await Promise.all(listed.map((tm) => callJson('GET', `http://${tm.host}:${tm.httpPort}/status`).then(() => true, () => false)));
      seen = `${listed.length} listed, ${answers.filter(Boolean).length} live`;
      return listed.length === count && answers.every(Boolean) && listed;
    },
    { timeoutMs: 60_000, everyMs: 200 },
  );
}

type Outcome = Pick<JobStatus, 'state' | 'error'>;

async function runJob(i: number): Promise<Outcome> {
  const exchange = i % 4 < 2 ? 'pipelined' : 'blocking';
  if (i % 2 === 0) {
    const output = path.join(work, `out-${i}`);
    const id = await submitUnderFire(i, { job: 'wordcount', params: { input: corpus, output }, parallelism: 4, exchange });
    const status = await waitFor(url, id);
    if (status.state === 'FINISHED') expectCounts(readTextOutput(output, 4), reference);
    else expect(fs.existsSync(output) ? fs.readdirSync(output).filter((f) => f.startsWith('part-')) : []).toEqual([]);
    return status;
  }
  const id = await submitUnderFire(i, { job: 'synthetic', params: { records: SYNTHETIC_RECORDS, keys: 500 }, parallelism: 4, exchange });
  const status = await waitFor(url, id);
  if (status.state === 'FINISHED') {
    const summaries = await result<[number, number]>(url, id);
    expect(summaries.reduce((sum, [records]) => sum + records, 0)).toBe(SYNTHETIC_RECORDS);
  }
  return status;
}

test(`${JOBS} jobs while a TaskManager is killed every few seconds: all but at most 2 finish exact, the others fail with a message; nothing is left behind`, async () => {
  killer = setInterval(killOne, KILL_EVERY_MS);
  const outcomes: Outcome[] = [];
  for (let i = 0; i < JOBS; i++) outcomes.push(await runJob(i));
  clearInterval(killer!);
  killer = null;
  await replacing;
  expect(killed.length, 'TaskManagers were killed while the jobs ran').toBeGreaterThan(3);
  const failed = outcomes.filter((o) => o.state !== 'FINISHED');
  expect(failed.every((o) => o.state === 'FAILED' && typeof o.error === 'string' && o.error.length > 0), JSON.stringify(failed)).toBe(true);
  expect(outcomes.length - failed.length, JSON.stringify(failed)).toBeGreaterThanOrEqual(JOBS - 2);

  // Once the JobManager lists just the live TaskManagers: every pool has all its buffers, no partition or spill file is left.
  const live = await liveTaskManagers(3);
  await expectTaskManagersIdle(url);
  for (const tm of live) {
    const status = await callJson<{ segmentsInUse: number; totalSegments: number }>('GET', `http://${tm.host}:${tm.httpPort}/status`);
    expect(status.segmentsInUse, `${tm.id} has all its buffers`).toBe(0);
  }
  const leftovers = fs.readdirSync(work).filter((d) => d.startsWith('out-')).flatMap((d) => fs.readdirSync(path.join(work, d)).filter((f) => !/^part-\d{5}$/.test(f)));
  expect(leftovers, 'no temporary sink file').toEqual([]);
  // Every killed TaskManager is gone; its spill folder lives in the cluster's folder, removed with it.
  expect(killed.every((p) => p.signalCode === 'SIGKILL')).toBe(true);
  const pids = cluster.processes.map((p) => p.pid!);
  await cluster.stop();
  for (const pid of [...pids, ...killed.map((p) => p.pid!)]) expect(() => process.kill(pid, 0), `process ${pid} is gone`).toThrow();
}, 300_000);

/**
 * Exactly once under faults (issue 29): streaming jobs that take checkpoints every 500 ms
 * on a cluster whose TaskManagers are SIGKILLed every few seconds, a replacement started
 * each time. What the sinks committed equals the reference exactly: nothing lost, nothing
 * written twice. The Redis to PostgreSQL job is issue 30's: in a key prefix and a schema of
 * its own, removed after it. One mode a test file (exactly-once-aligned.test.ts,
 * exactly-once-unaligned.test.ts), each on its cluster of its own: the two run side by side.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { NexmarkGenerator, type NexmarkEvent } from '../../src/connectors/nexmark/NexmarkGenerator.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { JobState } from '../../src/lifecycle/JobState.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from './cluster.js';
import { killHard, processOf, waitUntil, type JobDetails } from './failover.js';
import { eventually, sleep } from './eventually.js';
import { result, submitJob, taskManagers, uploadModule, waitFor } from './jobs.js';
import * as reference from './nexmarkReference.js';
import { drop, redisCountsModule, RUNNING_COUNT } from './keyedCounts.js';
import { postgresScope, redisScope } from './services.js';

const TASK_MANAGERS = 2;
const KILLS = 3;
// The file's cluster and folder: each test file that calls exactlyOnceTests runs in a process of its own.
let cluster: LocalCluster;
let url: string;
let work: string;

/** A job's checkpoints every 500 ms into a folder of its own; a lost trigger costs at most its 2 s timeout. */
function checkpoints(mode: 'aligned' | 'unaligned', name: string): Record<string, unknown> {
  return { interval: 500, mode, timeout: 2000, tolerableFailures: 1000, retain: 2, directory: path.join(work, `checkpoints-${name}`) };
}

async function completedCheckpoints(id: string): Promise<number> {
  return (await callJson<{ counts: { completed: number } }>('GET', `${url}/jobs/${id}/checkpoints`)).counts.completed;
}

/**
 * SIGKILLs a TaskManager that runs one of the job's tasks and starts a replacement, `kills`
 * times, each once the job (restarted from the kill before) has completed a checkpoint since:
 * a kill before any checkpoint completed would only test a restart from nothing.
 */
async function killRepeatedly(id: string, kills: number): Promise<string[]> {
  const victims: string[] = [];
  let checkpointed = 0;
  for (let k = 0; k < kills; k++) {
    await eventually(`job ${id}: a checkpoint completed after kill ${k}`, async () => (await completedCheckpoints(id)) > checkpointed, { everyMs: 100 });
    await replenished(victims);
    const job = await waitUntil(url, id, (j) => j.state === JobState.RUNNING && j.tasks.every((t) => t.state === 'RUNNING'), 'every task running', 30_000);
    // Each TaskManager that runs tasks of the job in turn: the sources' and the sinks' alike.
    const hosts = [...new Set(job.tasks.map((t) => t.taskManager))].sort();
    const victim = hosts[k % hosts.length];
    await killHard(await processOf(url, victim, cluster.processes));
    victims.push(victim);
    cluster.addTaskManager();
    // Counted once the job runs again after this kill: a checkpoint that was completing as it came is not one of the restarted job's.
    await waitUntil(url, id, (j) => j.restarts > k && j.state === JobState.RUNNING, `restart ${k + 1}`, 60_000);
    checkpointed = await completedCheckpoints(id);
  }
  return victims;
}

/** Waits until the cluster has its TaskManagers again, with the killed ones gone from the list. */
async function replenished(victims: readonly string[]): Promise<void> {
  let alive = 0;
  await eventually(() => `${TASK_MANAGERS} TaskManagers after the kills (${alive})`, async () => (alive = (await taskManagers(url)).filter((t) => !victims.includes(t.id)).length) >= TASK_MANAGERS, { everyMs: 100 });
  // Lets this process call the replacements' /status too.
  await cluster.waitForTaskManagers(0);
}

/** `files` files of `lines` lines of 8 words each from a vocabulary of `vocabulary`, seeded. */
function texts(files: number, lines: number, vocabulary: number, seed: number): string[][] {
  const random = seededRandom(seed);
  const line = (): string => Array.from({ length: 8 }, () => `w${Math.floor(random() * vocabulary)}`).join(' ');
  return Array.from({ length: files }, () => Array.from({ length: lines }, line));
}

/** Each key's committed counts are 1..n for its reference n, each once: a count lost or written twice shows. */
function expectEachCountOnce(updates: ReadonlyMap<string, number[]>, expected: ReadonlyMap<string, number>): void {
  expect([...updates.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [key, n] of expected) expect([...updates.get(key)!].sort((a, b) => a - b), `${key}: counts 1..${n}, each once`).toEqual(Array.from({ length: n }, (_, i) => i + 1));
}

/** Cancels a job a test started, whatever happened, and waits for its end. */
async function cancel(id: string): Promise<void> {
  await callJson('POST', `${url}/jobs/${id}/cancel`, {}).catch(() => undefined);
  await waitFor(url, id, 20_000).catch(() => undefined);
}

/** Every slot of the cluster comes to be free: the jobs of earlier tests, killed and restarted as they were, gave theirs back. */
async function expectSlotsFree(): Promise<void> {
  let seen = '';
  await eventually(
    () => `every slot free after the earlier jobs ended (${seen})`,
    async () => {
      const { taskmanagers } = await callJson<{ taskmanagers: { id: string; slots: number; freeSlots: number }[] }>('GET', `${url}/taskmanagers`);
      seen = JSON.stringify(taskmanagers);
      return taskmanagers.every((tm) => tm.freeSlots === tm.slots);
    },
    { everyMs: 100 },
  );
}

/** A running count per word over a watched folder, each update a pair that writeText writes as `word<TAB>count`. */
function runningCountModule(folder: string, output: string): string {
  return `import { JobBuilder } from 'spillway';
const job = new JobBuilder('running-count');
job
  .readText(${JSON.stringify(folder)}, { monitor: 50 })
  .parallelism(2)
  .flatMap((line, emit) => { for (const word of line.split(' ')) if (word !== '') emit(word); })
  .keyBy((word) => word)
  .process(${RUNNING_COUNT})
  .writeText(${JSON.stringify(output)});
export default job.build();
`;
}

/** The updates the committed (visible) part files of `dir` hold, per word: each count it was given. */
function committedUpdates(dir: string): Map<string, number[]> {
  const updates = new Map<string, number[]>();
  for (const name of fs.readdirSync(dir)) {
    if (name.startsWith('.')) continue;
    for (const line of fs.readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      if (line === '') continue;
      const [word, count] = line.split('\t');
      updates.set(word, [...(updates.get(word) ?? []), Number(count)]);
    }
  }
  return updates;
}

/** Whether every word's committed updates reached its reference count. */
function caughtUp(dir: string, expected: ReadonlyMap<string, number>): boolean {
  const updates = committedUpdates(dir);
  return [...expected].every(([word, n]) => (updates.get(word) ?? []).includes(n));
}

/** The three jobs under kills, in `mode`, on a cluster of the calling file's own. */
export function exactlyOnceTests(mode: 'aligned' | 'unaligned'): void {
  const test = clusterTest({
    taskManagers: TASK_MANAGERS,
    slots: 2,
    heartbeatTimeoutMs: 8000,
    jobManagerArgs: ['--restart-attempts', '50', '--restart-delay', '200'],
    extraArgs: ['--cancel-timeout', '5000'],
  })
    // eslint-disable-next-line no-empty-pattern -- vitest reads a fixture's dependencies from this pattern: none
    .extend('redis', async ({}, { onCleanup }) => redisScope(onCleanup))
    // eslint-disable-next-line no-empty-pattern -- as above
    .extend('postgres', async ({}, { onCleanup }) => postgresScope(onCleanup));

  test.beforeAll(async ({ cluster: started }) => {
    cluster = started;
    url = cluster.url;
    work = fs.mkdtempSync(path.join(os.tmpdir(), `spillway-exactly-once-${mode}-`));
  });
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  describe(`exactly once with ${mode} checkpoints while TaskManagers are SIGKILLed`, () => {
    test('a running word count over a watched folder, written with writeText: each word has each of its counts committed exactly once', async () => {
      const folder = path.join(work, `words-${mode}`);
      const output = path.join(work, `counts-${mode}`);
      fs.mkdirSync(folder);
      const inputs = texts(24, 200, 400, mode === 'aligned' ? 5 : 6);
      const expected = new Map<string, number>();
      for (const word of inputs.flat().flatMap((line) => line.split(' '))) expected.set(word, (expected.get(word) ?? 0) + 1);
      await expectSlotsFree();
      const id = await submitJob(url, { module: await uploadModule(url, runningCountModule(folder, output)), parallelism: 4, checkpoints: checkpoints(mode, `words-${mode}`) });
      let stopped = false;
      try {
        await waitUntil(url, id, (j) => j.state === JobState.RUNNING, 'running', 30_000);
        // Files come while the TaskManagers are killed: one every 400 ms.
        let dropped = 0;
        const dropping = (async () => {
          for (let i = 0; i < inputs.length && !stopped; i++, dropped++) {
            drop(folder, `in-${String(i).padStart(3, '0')}`, inputs[i]);
            await sleep(400);
          }
        })();
        const victims = await killRepeatedly(id, KILLS).finally(() => dropping);
        expect(dropped).toBe(inputs.length);
        await replenished(victims);
        await eventually(
          async () => {
            const updates = [...committedUpdates(output).values()].reduce((sum, counts) => sum + counts.length, 0);
            const checkpointed = await callJson<{ counts: unknown }>('GET', `${url}/jobs/${id}/checkpoints`);
            const [word, n] = [...expected].find(([w, c]) => !(committedUpdates(output).get(w) ?? []).includes(c)) ?? ['', 0];
            const sample = (committedUpdates(output).get(word) ?? []).sort((a, b) => a - b).join(',');
            return `job ${id}: all ${inputs.length * 1600} updates committed (${updates} are); checkpoints ${JSON.stringify(checkpointed.counts)}; ${word} expected ${n}, has ${sample}`;
          },
          async () => {
            if (caughtUp(output, expected)) return true;
            const job = await callJson<JobDetails>('GET', `${url}/jobs/${id}`);
            if (job.state !== JobState.RUNNING) throw new Error(`job ${id} ended ${job.state}: ${JSON.stringify(job)}`);
            return false;
          },
          { timeoutMs: 90_000, everyMs: 200 },
        );
        expectEachCountOnce(committedUpdates(output), expected);
        expect((await callJson<JobDetails>('GET', `${url}/jobs/${id}`)).restarts).toBeGreaterThanOrEqual(KILLS);
      } finally {
        stopped = true;
        await cancel(id);
      }
    }, 180_000);

    test('nexmark-q5 (sliding windows, then a keyed process with timers), paced over 20 s: its collected rows are the reference exactly', async () => {
      // Paced so that its sources still run, and checkpoint, through the three kills and restarts of a loaded machine.
      const params = { events: 30_000, rate: 1_500, seed: 11 };
      const generator = new NexmarkGenerator(params);
      const events: NexmarkEvent[] = [];
      for (let e = generator.next(); e !== null; e = generator.next()) events.push(e);
      await expectSlotsFree();
      const id = await submitJob(url, { job: 'nexmark-q5', params, parallelism: 4, checkpoints: checkpoints(mode, `q5-${mode}`) });
      try {
        await waitUntil(url, id, (j) => j.state === JobState.RUNNING, 'running', 30_000);
        const victims = await killRepeatedly(id, KILLS);
        const status = await waitFor(url, id, 90_000);
        expect(status.state, status.error).toBe(JobState.FINISHED);
        expect(reference.sortRows((await result(url, id)) as never)).toEqual(reference.q5(events));
        expect((await callJson<JobDetails>('GET', `${url}/jobs/${id}`)).restarts).toBeGreaterThanOrEqual(KILLS);
        await replenished(victims);
      } finally {
        await cancel(id);
      }
    }, 180_000);

    test('Redis Streams to PostgreSQL: a running count per key, each update inserted: the table holds each key’s counts 1..n, each once', async ({ redis, postgres: pg }) => {
      const streams = ['s0', 's1', 's2'].map((name) => redis.key(name));
      await pg.client.query('CREATE TABLE updates (key text, n integer)');
      const expected = new Map<string, number>();
      await expectSlotsFree();
      const id = await submitJob(url, { module: await uploadModule(url, redisCountsModule('redis-counts', redis.url, streams, pg.url)), parallelism: 4, checkpoints: checkpoints(mode, `redis-${mode}`) });
      let stopped = false;
      try {
        await waitUntil(url, id, (j) => j.state === JobState.RUNNING, 'running', 30_000);
        // Entries come while the TaskManagers are killed: 300 every 200 ms, over 60 keys.
        let added = 0;
        const adding = (async () => {
          for (let batch = 0; batch < 50 && !stopped; batch++) {
            const pipeline = redis.client.pipeline();
            for (let i = 0; i < 300; i++, added++) {
              const key = `k${(added * 7) % 60}`;
              expected.set(key, (expected.get(key) ?? 0) + 1);
              pipeline.xadd(streams[added % streams.length], '*', 'key', key);
            }
            await pipeline.exec();
            await sleep(200);
          }
        })();
        const victims = await killRepeatedly(id, KILLS).finally(() => adding);
        expect(added).toBe(15_000);
        await replenished(victims);
        const rowsOf = async (): Promise<{ key: string; n: number }[]> => (await pg.client.query<{ key: string; n: number }>('SELECT key, n FROM updates')).rows;
        let rows = 0;
        await eventually(() => `job ${id}: ${added} rows committed (${rows} are)`, async () => (rows = (await rowsOf()).length) >= added, { timeoutMs: 90_000, everyMs: 200 });
        const counts = new Map<string, number[]>();
        for (const { key, n } of await rowsOf()) counts.set(key, [...(counts.get(key) ?? []), n]);
        expectEachCountOnce(counts, expected);
        expect((await callJson<JobDetails>('GET', `${url}/jobs/${id}`)).restarts).toBeGreaterThanOrEqual(KILLS);
      } finally {
        stopped = true;
        await cancel(id);
      }
    }, 180_000);
  });
}

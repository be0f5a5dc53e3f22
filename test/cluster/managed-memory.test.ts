import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { LocalCluster } from '../../src/cli/LocalCluster.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { customers, orders, type Joined } from '../../src/job/builtins/Join.js';
import { checkSortOutput } from '../../src/job/builtins/Sort.js';
import { clusterTest } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { expectFinished, type JobStatus, result, submitJob, uploadModule, waitFor } from '../helpers/jobs.js';
import { DEFAULT_CANCEL_TIMEOUT_MS } from '../../src/taskmanager/TaskManagerOptions.js';

/** 2 TaskManagers of 2 slots with 1 MiB of managed memory each: 512 KiB a slot, so every job below spills. */
const MANAGED = '1mb';
const BIN = path.resolve('bin/spillway.js');

interface Status extends JobStatus<{ stage: string; counters: { spilledBytes: number } }> {
  counters: { spilledBytes: number };
}

let cluster: LocalCluster;
let url: string;
let work: string;

const test = clusterTest({ taskManagers: 2, slots: 2, memory: '64mb', managedMemory: MANAGED });

test.beforeAll(async ({ cluster: started }) => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-managed-cluster-'));
  cluster = started;
  url = cluster.url;
}, 60_000);

afterAll(async () => {
  fs.rmSync(work, { recursive: true, force: true });
});

async function status(id: string, at = url): Promise<Status> {
  return callJson<Status>('GET', `${at}/jobs/${id}`);
}

/** Submits a sort far too big to finish during a test, and resolves once its sorts have spilled. */
async function startSpillingSort(at: string, output: string): Promise<string> {
  const id = await submitJob(at, { job: 'sort', params: { records: 500_000_000, output }, parallelism: 4 });
  return eventually(
    `job ${id} spilled`,
    async () => {
      const job = await status(id, at);
      if (job.state !== 'RUNNING' && job.state !== 'CREATED') throw new Error(`job ${id} ${job.state} before it spilled: ${job.error}`);
      return job.counters.spilledBytes > 0 && id;
    },
    { timeoutMs: 60_000, everyMs: 100 },
  );
}

function spilledBy(job: Status, stage: string): number {
  return job.tasks.filter((t) => t.stage === stage).reduce((sum, t) => sum + t.counters.spilledBytes, 0);
}

/** Every TaskManager's operator spill files; none may outlive its task. */
async function managedSpillFiles(): Promise<string[]> {
  const { taskmanagers } = await callJson<{ taskmanagers: { host: string; httpPort: number }[] }>('GET', `${url}/taskmanagers`);
  const lists = await Promise.all(taskmanagers.map((tm) => callJson<{ managedSpillFiles: string[] }>('GET', `http://${tm.host}:${tm.httpPort}/status`)));
  return lists.flatMap((l) => l.managedSpillFiles);
}

describe('jobs on TaskManagers with 512 KiB of managed memory a slot', () => {
  test('the built-in sort of 300,000 records spills, and its part files are globally sorted and complete', async () => {
    const output = path.join(work, 'sorted');
    const records = 300_000;
    const id = await submitJob(url, { job: 'sort', params: { records, seed: 3, output }, parallelism: 4 });
    await expectFinished(url, id);
    const job = await status(id);
    // About 18 bytes a record packed: the sorts held several times their budget.
    expect(spilledBy(job, 'sort'), 'bytes the sort tasks spilled').toBeGreaterThan(records * 10);
    expect(checkSortOutput(output, records, 3, 4)).toBeNull();
    expect(await managedSpillFiles()).toEqual([]);
  }, 90_000);

  test('the built-in join with a build side several times the budget gives exactly the in-memory join', async () => {
    const params = { customers: 40_000, orders: 120_000 };
    const id = await submitJob(url, { job: 'join', params, parallelism: 4 });
    await expectFinished(url, id);
    expect(spilledBy(await status(id), 'join'), 'bytes the join tasks spilled').toBeGreaterThan(0);
    const names = new Map([...customers(params.customers)].map(([cid, name]) => [cid, name]));
    const expected = [...orders(params.orders, params.customers)].filter(([cid]) => names.has(cid)).map(([cid, amount]) => `${cid} ${names.get(cid)} ${amount}`);
    const got = (await result<Joined>(url, id)).map(([cid, name, amount]) => `${cid} ${name} ${amount}`);
    expect(got.length).toBe(expected.length);
    expect(got.sort()).toEqual(expected.sort());
    expect(await managedSpillFiles()).toEqual([]);
  }, 90_000);

  test('reduceByKey over 60,000 keys spills its table and counts every key exactly', async () => {
    const source = `export default () => ({
      name: 'many-keys',
      stages: [
        { name: 'gen', source: { kind: 'generate', generate: function* (i, n) { for (let j = i; j < 240000; j += n) yield [j % 60000, j % 7]; } } },
        { name: 'sum', inputs: [{ from: 'gen', partitioning: { type: 'hash', key: (r) => r[0] } }],
          operators: [{ reduceByKey: { key: (r) => r[0], reduce: (a, b) => [a[0], a[1] + b[1]] } }], sink: { kind: 'collect' } },
      ],
    });`;
    const hash = await uploadModule(url, source);
    const id = await submitJob(url, { module: hash, params: {}, parallelism: 4 });
    await expectFinished(url, id);
    expect(spilledBy(await status(id), 'sum'), 'bytes the reducing tasks spilled').toBeGreaterThan(0);
    const sums = new Map<number, number>();
    for (let j = 0; j < 240_000; j++) sums.set(j % 60_000, (sums.get(j % 60_000) ?? 0) + (j % 7));
    const got = await result<[number, number]>(url, id);
    expect(got.length).toBe(sums.size);
    for (const [key, sum] of got) if (sums.get(key) !== sum) expect.fail(`key ${key}: ${sum}, expected ${sums.get(key)}`);
    expect(await managedSpillFiles()).toEqual([]);
  }, 90_000);

  test('a sort whose spill files are removed while it runs fails with a message that names the file, and leaves none', async () => {
    // The source removes every spill file under the TaskManagers' managed folders once it has emitted its records.
    const dirs = [0, 1].map((i) => path.join(cluster.taskManagerDir(i), 'managed'));
    const source = `import fs from 'node:fs';
    import path from 'node:path';
    const remove = (dir) => { for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.name.endsWith('.spill')) fs.rmSync(path.join(e.parentPath, e.name), { force: true }); };
    export default (params) => ({
      name: 'spill-gone',
      stages: [
        { name: 'gen', source: { kind: 'generate', generate: function* (i, n) {
          for (let j = i; j < 200000; j += n) yield [(j * 7919) % 100003, 'v' + j];
          for (const dir of params.dirs.split(',')) if (fs.existsSync(dir)) remove(dir);
        } } },
        { name: 'sort', inputs: [{ from: 'gen', partitioning: { type: 'forward' } }], operators: [{ sortBy: { key: (r) => r[0] } }, { filter: () => false }], sink: { kind: 'collect' } },
      ],
    });`;
    const hash = await uploadModule(url, source);
    const id = await submitJob(url, { module: hash, params: { dirs: dirs.join(',') }, parallelism: 2 });
    const ended = await waitFor(url, id, 60_000);
    expect(ended.state).toBe('FAILED');
    expect(ended.error).toMatch(/spill file \S+sort-run-\d+\.spill is gone/);
    // The failed tasks' folders go as their tasks end: the other subtasks, canceled as the job failed, stop within their
    // cancel timeout (a sort busy spilling stops at its next check, or is terminated then).
    await eventually('no managed spill file left', async () => (await managedSpillFiles()).length === 0, { timeoutMs: DEFAULT_CANCEL_TIMEOUT_MS + 30_000, everyMs: 100 });
  }, 90_000);

  test('a canceled sort stops while it spills, and its spill files go', async () => {
    const id = await startSpillingSort(url, path.join(work, 'canceled'));
    await callJson('POST', `${url}/jobs/${id}/cancel`, {});
    expect((await waitFor(url, id, 30_000)).state).toBe('CANCELED');
    // Within the cancel timeout (10 s), after which a task that did not stop is terminated.
    await eventually('no managed spill file left', async () => (await managedSpillFiles()).length === 0, { timeoutMs: DEFAULT_CANCEL_TIMEOUT_MS + 30_000, everyMs: 100 });
  }, 90_000);
});

describe('a TaskManager killed with SIGKILL during a spilling sort', () => {
  let own: LocalCluster;
  let ownUrl: string;
  beforeAll(async () => {
    // Without restarts: with no spare slot the job would otherwise wait --slot-timeout to restart.
    own = new LocalCluster({ taskManagers: 2, slots: 2, memory: '64mb', managedMemory: MANAGED, heartbeatTimeoutMs: 5000, stdio: 'ignore', jobManagerArgs: ['--restart-strategy', 'none'] });
    ownUrl = await own.start();
  }, 60_000);
  afterAll(async () => {
    await own?.stop();
  });

  test('fails the job, and the other TaskManager keeps no spill files', async () => {
    const id = await startSpillingSort(ownUrl, path.join(work, 'killed'));
    // processes[0] is the JobManager, [1] and [2] the TaskManagers 0 and 1.
    own.processes[2].kill('SIGKILL');
    const ended = await waitFor(ownUrl, id, 60_000);
    expect(ended.state).toBe('FAILED');
    const survivor = path.join(own.taskManagerDir(0), 'managed');
    const left = (): string[] => (fs.existsSync(survivor) ? fs.readdirSync(survivor, { recursive: true }).map(String) : []);
    await eventually(() => `the survivor keeps no spill file (${left().join(' ')})`, () => left().length === 0, { everyMs: 100 });
  }, 90_000);
});

test('a TaskManager removes the operator spill files it finds in its spill dir at start (left by one that was killed)', async () => {
  const spillDir = path.join(work, 'reused');
  const stale = path.join(spillDir, 'managed', 'job-0001-x.sort.0');
  fs.mkdirSync(stale, { recursive: true });
  fs.writeFileSync(path.join(stale, 'sort-run-00000.spill'), 'left by a TaskManager killed with SIGKILL');
  const child = spawn(process.execPath, [BIN, 'taskmanager', '--jobmanager', url, '--spill-dir', spillDir, '--memory', '16mb', '--managed-memory', '1mb', '--slots', '1'], { stdio: 'ignore' });
  try {
    // Slow on a loaded machine: the process starts, then clears the folder before it registers.
    await eventually('the stale folder removed', () => !fs.existsSync(stale), { timeoutMs: 50_000, everyMs: 100 });
    expect(fs.existsSync(path.join(spillDir, 'managed')), 'the old managed folder').toBe(false);
  } finally {
    child.kill('SIGKILL');
  }
}, 60_000);

test('a TaskManager with less than 4 KiB of managed memory a slot refuses to start, naming the flag', async () => {
  const child = spawn(process.execPath, [BIN, 'taskmanager', '--jobmanager', 'http://127.0.0.1:9', '--managed-memory', '6kb', '--slots', '2', '--spill-dir', path.join(work, 'small')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(1);
  expect(stderr).toMatch(/--managed-memory 6144 is below 4096 bytes a slot \(2 slots\): give it at least 8192/);
}, 30_000);

/**
 * Tasks run in threads: a task that never yields is terminated after the cancel
 * timeout, a thread that dies fails only its job, slots run in parallel over shared
 * network memory, and after many jobs every buffer and thread is back. Real
 * processes from dist/ (`npm run build` first); every one is stopped after the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { LocalCluster } from '../../src/cli/LocalCluster.js';
import { seededRandom, writeCorpus } from '../../src/job/Corpus.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { forEachWord } from '../../src/job/Tokenizer.js';
import { tempDir } from '../helpers/plane.js';
import { clusterTest } from '../helpers/cluster.js';
import { eventually, sleep } from '../helpers/eventually.js';
import { waitUntil } from '../helpers/failover.js';
import { uploadModule, waitFor, waitRunning } from '../helpers/jobs.js';

const CANCEL_TIMEOUT = 1500;
const SLOTS = 2;

interface TaskManagerStatus {
  pid: number;
  tasks: string[];
  partitions: string[];
  spillFiles: string[];
  busyThreads: number;
  idleThreads: number;
  segmentsInUse: number;
}

class Client {
  constructor(readonly url: string) {}

  async submit(body: Record<string, unknown>): Promise<string> {
    return (await callJson<{ id: string }>('POST', `${this.url}/jobs`, body)).id;
  }

  async upload(source: string): Promise<string> {
    return uploadModule(this.url, source);
  }

  async taskManagers(): Promise<TaskManagerStatus[]> {
    const { taskmanagers } = await callJson<{ taskmanagers: { host: string; httpPort: number }[] }>('GET', `${this.url}/taskmanagers`);
    return Promise.all(taskmanagers.map((tm) => callJson<TaskManagerStatus>('GET', `http://${tm.host}:${tm.httpPort}/status`)));
  }

  /** Every TaskManager is idle: no task, no partition, no spill file, no busy thread, every buffer back. */
  async expectIdle(slots = SLOTS): Promise<TaskManagerStatus[]> {
    let statuses: TaskManagerStatus[] = [];
    const idle = (s: TaskManagerStatus): boolean =>
      s.tasks.length === 0 && s.partitions.length === 0 && s.spillFiles.length === 0 && s.busyThreads === 0 && s.segmentsInUse === 0;
    // Past the timeout the assertions below name what is left.
    await eventually('every TaskManager idle', async () => (statuses = await this.taskManagers()).every(idle), { everyMs: 100 }).catch(() => undefined);
    for (const s of statuses) {
      expect(s.tasks, 'tasks').toEqual([]);
      expect(s.partitions, 'partitions').toEqual([]);
      expect(s.spillFiles, 'spill files').toEqual([]);
      expect(s.busyThreads, 'busy task threads').toBe(0);
      expect(s.idleThreads, 'idle task threads, at most the reuse pool').toBeLessThanOrEqual(2 * slots);
      expect(s.segmentsInUse, 'network buffers in use').toBe(0);
    }
    return statuses;
  }
}

/** Deterministic text with ASCII or Unicode words, apostrophes, digits and punctuation. */
function randomText(seed: number, lines: number, unicode: boolean): string {
  const random = seededRandom(seed);
  const alphabet = unicode ? ['a', 'B', 'é', 'Ω', 'ж', 'Ж', '中', "'", '7', 'ß', 'İ', 'e\u0301'] : ['a', 'b', 'C', 'd', "'", '7', 'z'];
  const separators = [' ', ' ', ', ', '. ', '\t', unicode ? '😀' : '-', unicode ? '\u3000' : ';'];
  const out: string[] = [];
  for (let l = 0; l < lines; l++) {
    const words: string[] = [];
    for (let w = 1 + Math.floor(random() * 12); w > 0; w--) {
      let word = '';
      for (let c = 1 + Math.floor(random() * 6); c > 0; c--) word += alphabet[Math.floor(random() * random() * alphabet.length)];
      words.push(word + separators[Math.floor(random() * separators.length)]);
    }
    out.push(words.join(''));
  }
  return out.join('\n') + '\n';
}

function referenceCounts(dir: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const file of fs.readdirSync(dir)) forEachWord(fs.readFileSync(path.join(dir, file), 'utf8'), (w) => counts.set(w, (counts.get(w) ?? 0) + 1));
  return counts;
}

async function wordCount(client: Client, input: string, exchange: string, parallelism = 4): Promise<Map<string, number>> {
  const id = await client.submit({ job: 'wordcount', params: { input }, parallelism, exchange });
  const status = await waitFor(client.url, id);
  expect(status.state, status.error).toBe('FINISHED');
  const { records } = await callJson<{ records: [string, number][] }>('GET', `${client.url}/jobs/${id}/result`);
  return new Map(records);
}

const SPIN = `export default { name: 'spin', stages: [
  { name: 'one', source: { kind: 'generate', generate: function* () { yield 1; } }, operators: [{ map: (x) => { for (;;) {} } }] },
  { name: 'out', inputs: [{ from: 'one', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } } ] };`;

/** The cluster of the first suite (the others start clusters of their own, each for one test). */
const test = clusterTest({ taskManagers: 2, slots: SLOTS, memory: '64mb', extraArgs: ['--cancel-timeout', String(CANCEL_TIMEOUT), '--task-heap', '64mb'] });

describe('a cluster of 2 TaskManagers with 2 slots each, tasks in threads', () => {
  let client: Client;
  let work: { dir: string; remove: () => void };

  test.beforeAll(({ cluster }) => {
    work = tempDir('threads');
    client = new Client(cluster.url);
    for (const unicode of [false, true]) {
      const dir = path.join(work.dir, unicode ? 'unicode' : 'ascii');
      fs.mkdirSync(dir);
      for (let f = 0; f < 3; f++) fs.writeFileSync(path.join(dir, `part-${f}.txt`), randomText(f + (unicode ? 100 : 0), 4000, unicode));
    }
  }, 60_000);

  afterAll(() => {
    work?.remove();
  });

  for (const text of ['ascii', 'unicode']) {
    for (const exchange of ['pipelined', 'blocking']) {
      test(`multi-slot word count over random ${text} text, ${exchange}, equals the reference tokenizer`, async () => {
        const input = path.join(work.dir, text);
        expect(await wordCount(client, input, exchange)).toEqual(referenceCounts(input));
      });
    }
  }

  test('a task that spins forever is terminated past the cancel timeout of a cancel, and the TaskManager runs word count exactly next', async () => {
    const id = await client.submit({ module: await client.upload(SPIN), parallelism: 4 });
    await waitUntil(client.url, id, (job) => job.tasks.length > 0 && job.tasks.every((t) => t.state === 'RUNNING'), 'every task running');
    await callJson('POST', `${client.url}/jobs/${id}/cancel`, {});
    expect((await waitFor(client.url, id)).state).toBe('CANCELED');
    // Every thread stopped (the spinning ones terminated) and every buffer back.
    await client.expectIdle();
    const input = path.join(work.dir, 'ascii');
    expect(await wordCount(client, input, 'pipelined')).toEqual(referenceCounts(input));
  });

  test('an error thrown outside any operator fails only its job, with the message', async () => {
    // The source runs long, so the timer fires (at the source's first yield to the event loop) while the task runs.
    const source = `export default { name: 'throws', stages: [
      { name: 'one', source: { kind: 'generate', generate: function* () { for (let i = 0; i < 1e9; i++) yield i; } },
        operators: [{ map: (x) => { if (x === 0) setTimeout(() => { throw new Error('thrown outside the operator'); }, 0); return [x % 10, 1]; } }] },
      { name: 'out', inputs: [{ from: 'one', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } } ] };`;
    const id = await client.submit({ module: await client.upload(source), parallelism: 2, restart: { strategy: 'none' } });
    const status = await waitFor(client.url, id);
    expect(status.state).toBe('FAILED');
    expect(status.errorCode).toBe('SPW_ERR_TASK_THREAD');
    expect(status.error, 'the thrown error is named').toContain('thrown outside the operator');
    await client.expectIdle();
    const next = await client.submit({ job: 'synthetic', params: { records: 20_000, keys: 100 }, parallelism: 4 });
    expect((await waitFor(client.url, next)).state).toBe('FINISHED');
  });

  test("a timer left by a finished task that throws ends only its idle thread, not the TaskManager", async () => {
    const fired = path.join(work.dir, 'timers-fired');
    const source = `import fs from 'node:fs';
export default { name: 'leaves-a-timer', stages: [
      { name: 'one', source: { kind: 'generate', generate: function* () { yield 1; } },
        operators: [{ map: (x) => { setTimeout(() => { fs.appendFileSync(${JSON.stringify(fired)}, 'fired\\n'); throw new Error('thrown after the task ended'); }, 300); return [x, 1]; } }] },
      { name: 'out', inputs: [{ from: 'one', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } } ] };`;
    const id = await client.submit({ module: await client.upload(source), parallelism: 2, restart: { strategy: 'none' } });
    expect((await waitFor(client.url, id)).state).toBe('FINISHED');
    // Each of the two subtasks left its timer.
    await eventually('both timers fired', () => fs.existsSync(fired) && fs.readFileSync(fired, 'utf8').split('\n').length > 2);
    const statuses = await client.expectIdle();
    expect(statuses, 'both TaskManagers still answer').toHaveLength(2);
    const next = await client.submit({ job: 'synthetic', params: { records: 20_000, keys: 100 }, parallelism: 4 });
    expect((await waitFor(client.url, next)).state).toBe('FINISHED');
  });

  test('a task that exceeds --task-heap fails only its job, naming the setting', async () => {
    const source = `export default { name: 'hog', stages: [
      { name: 'one', source: { kind: 'generate', generate: function* () { yield 1; } },
        operators: [{ map: (x) => { const keep = []; for (;;) keep.push(new Array(100000).fill(x + keep.length)); } }] },
      { name: 'out', inputs: [{ from: 'one', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } } ] };`;
    const id = await client.submit({ module: await client.upload(source), parallelism: 2, restart: { strategy: 'none' } });
    const status = await waitFor(client.url, id);
    expect(status.state).toBe('FAILED');
    expect(status.errorCode).toBe('SPW_ERR_TASK_THREAD');
    expect(status.error, 'the setting is named').toContain('--task-heap');
    await client.expectIdle();
    const next = await client.submit({ job: 'synthetic', params: { records: 20_000, keys: 100 }, parallelism: 4 });
    expect((await waitFor(client.url, next)).state).toBe('FINISHED');
  });

  test('after 100 jobs, canceled and failed ones among them, every pool has all its buffers, no thread is busy and no spill file is left', async () => {
    const failing = await client.upload(`export default { name: 'fails', stages: [
      { name: 'one', source: { kind: 'generate', generate: function* (i) { for (let k = 0; k < 1000; k++) yield k; } },
        operators: [{ map: (x) => { if (x === 500) throw new Error('fails on purpose'); return [x, 1]; } }] },
      { name: 'out', inputs: [{ from: 'one', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } } ] };`);
    const spin = await client.upload(SPIN);
    const input = path.join(work.dir, 'ascii');
    const states = new Map<string, number>();
    const batches = 25;
    for (let batch = 0; batch < batches; batch++) {
      const exchange = batch % 2 === 0 ? 'pipelined' : 'blocking';
      const ids = [
        await client.submit({ job: 'synthetic', params: { records: 5000, keys: 50 }, parallelism: 4, exchange }),
        await client.submit({ job: 'wordcount', params: { input }, parallelism: 2, exchange }),
        await client.submit({ module: failing, parallelism: 2, exchange, restart: { strategy: 'none' } }),
      ];
      const canceled = batch % 5 === 0 ? await client.submit({ module: spin, parallelism: 2 }) : await client.submit({ job: 'synthetic', params: { records: 50_000_000, keys: 50 }, parallelism: 2, exchange });
      await sleep(20);
      await callJson('POST', `${client.url}/jobs/${canceled}/cancel`, {});
      for (const id of [...ids, canceled]) {
        const { state } = await waitFor(client.url, id);
        states.set(state, (states.get(state) ?? 0) + 1);
      }
    }
    expect(Object.fromEntries(states)).toEqual({ FINISHED: 2 * batches, FAILED: batches, CANCELED: batches });
    await client.expectIdle();
  }, 240_000);
});

describe('8 slots per TaskManager and little network memory', () => {
  test('a job at parallelism 8 runs to the end when the minimums fit, and is refused at deployment, naming --memory, when they do not', async () => {
    for (const [memory, fits] of [['16mb', true], ['2mb', false]] as const) {
      // 16 task threads on each TaskManager: on a loaded machine of 2 cores its heartbeats have been 10 s (the default timeout) apart.
      const cluster = new LocalCluster({ taskManagers: 2, slots: 8, memory, stdio: 'ignore', heartbeatTimeoutMs: 60_000 });
      try {
        const client = new Client(await cluster.start());
        for (const exchange of ['pipelined', 'blocking']) {
          // Without restarts: a restart deploys fewer tasks at once, which may then fit.
          const id = await client.submit({ job: 'synthetic', params: { records: 200_000, keys: 1000 }, parallelism: 8, exchange, restart: { strategy: 'none' } });
          const status = await waitFor(client.url, id);
          if (fits) expect(status.state, status.error).toBe('FINISHED');
          else {
            expect(status.state).toBe('FAILED');
            expect(status.errorCode).toBe('SPW_ERR_INSUFFICIENT_NETWORK_MEMORY');
            expect(status.error, 'the setting is named').toContain('--memory');
          }
          await client.expectIdle(8);
        }
      } finally {
        await cluster.stop();
      }
    }
  }, 120_000);
});

test('SIGTERM stops a TaskManager whose task never yields, past the cancel timeout', async () => {
  const cluster = new LocalCluster({ taskManagers: 1, slots: 2, stdio: 'ignore', extraArgs: ['--cancel-timeout', String(CANCEL_TIMEOUT)] });
  try {
    const client = new Client(await cluster.start());
    const id = await client.submit({ module: await client.upload(SPIN), parallelism: 2 });
    await waitUntil(client.url, id, (job) => job.tasks.length > 0 && job.tasks.every((t) => t.state === 'RUNNING'), 'every task running');
    const [{ pid }] = await client.taskManagers();
    const child = cluster.processes.find((p) => p.pid === pid)!;
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    child.kill('SIGTERM');
    // It exits (terminating the spinning thread), and by its own hand: not ended by the signal's default.
    expect(await exited).toBeNull();
  } finally {
    await cluster.stop();
  }
}, 60_000);

test('with its JobManager gone, a task waiting for its next splits stops on SIGTERM at once, not at the cancel timeout', async () => {
  // Longer than the test may run: a TaskManager that waited for it would fail the test by its timeout.
  const cancelTimeout = 600_000;
  const work = tempDir('threads-jm-gone');
  const cluster = new LocalCluster({ taskManagers: 1, slots: 2, stdio: 'ignore', extraArgs: ['--cancel-timeout', String(cancelTimeout)] });
  try {
    writeCorpus(work.dir, 4, 8_000_000);
    const client = new Client(await cluster.start());
    const [{ pid }] = await client.taskManagers();
    const id = await client.submit({ job: 'wordcount', params: { input: work.dir }, parallelism: 2 });
    await waitRunning(client.url, id);
    cluster.jobManager.kill('SIGKILL');
    // A pause, not a wait: the tokenize tasks read what they hold and then wait for answers that do not come (their
    // TaskManager retries for a minute). A SIGTERM sooner finds them reading, which stops them at once as well.
    await sleep(1000);
    const child = cluster.processes.find((p) => p.pid === pid)!;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;
  } finally {
    await cluster.stop();
    work.remove();
  }
}, 60_000);

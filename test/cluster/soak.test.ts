import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { openDescriptors, processStats, type ProcessStats } from '../../src/cli/ProcessStats.js';
import { customers, orders } from '../../src/job/builtins/Join.js';
import { callJson, HttpError } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { eventually, sleep } from '../helpers/eventually.js';
import { expectTaskManagersIdle, submitJob, uploadModule, waitFor } from '../helpers/jobs.js';

// SOAK_JOBS=1000 runs a longer soak; the suite runs 300 jobs (150 past the baseline, taken at
// the middle), which keeps npm test within its 8 minutes.
const JOBS = Number(process.env.SOAK_JOBS ?? 300);
const BASELINE_AT = Math.min(200, Math.floor(JOBS / 2));
const IN_FLIGHT = 4;
const JOB_HISTORY = 40;
const MODULE_TTL_MS = 1500;
/** The last jobs run no module: they push every job that ran one out of the history, so that every module can go. */
const PLAIN_TAIL = JOB_HISTORY + 10;

let cluster: LocalCluster;
let url: string;
let work: string;
let text: string;

const MODULES = [0, 1, 2].map(
  (n) => `export default (params) => ({ name: 'squares-${n}', stages: [
  { name: 'gen', source: { kind: 'generate', generate: function* (i, p) { for (let x = i; x < params.n; x += p) yield x; } }, operators: [{ map: (x) => [x % 7, x * x + ${n}] }] },
  { name: 'sum', inputs: [{ from: 'gen', partitioning: { type: 'hash', key: (r) => r[0] } }],
    operators: [{ reduceByKey: { key: (r) => r[0], reduce: (a, b) => [a[0], a[1] + b[1]] } }], sink: { kind: 'collect' } } ] });`,
);
const FAILING = `export default { name: 'failing', stages: [
  { name: 'gen', source: { kind: 'generate', generate: function* () { for (let i = 0; i < 1000; i++) yield i; } },
    operators: [{ map: (x) => { if (x === 300) throw new Error('boom at 300'); return [x % 10, 1]; } }] },
  { name: 'count', inputs: [{ from: 'gen', partitioning: { type: 'hash', key: (r) => r[0] } }], sink: { kind: 'collect' } } ] };`;

type Kind = 'wordcount' | 'wordcount-files' | 'synthetic' | 'join' | 'sort' | 'module' | 'failing' | 'canceled';
const CYCLE: Kind[] = ['wordcount', 'synthetic', 'module', 'join', 'sort', 'wordcount-files', 'synthetic', 'module', 'failing', 'wordcount', 'canceled', 'sort'];

interface Expected {
  state: 'FINISHED' | 'FAILED' | 'CANCELED' | 'FAILED or CANCELED';
  check?: (records: unknown[]) => void;
}

/** The i-th job of the soak: its kind cycles, with the exchange alternating and no module in the tail. */
function jobOf(i: number, hashes: { modules: string[]; failing: string }): { body: Record<string, unknown>; expected: Expected; cancel: boolean; upload?: string } {
  let kind = CYCLE[i % CYCLE.length];
  if (i >= JOBS - PLAIN_TAIL && (kind === 'module' || kind === 'failing')) kind = 'synthetic';
  const exchange = Math.floor(i / CYCLE.length) % 2 === 0 ? 'pipelined' : 'blocking';
  const parallelism = 1 + (i % 2);
  const base = { parallelism, exchange };
  switch (kind) {
    case 'wordcount':
      return { body: { ...base, job: 'wordcount', params: { input: text } }, expected: { state: 'FINISHED', check: expectWords }, cancel: false };
    case 'wordcount-files':
      return { body: { ...base, job: 'wordcount', params: { input: text, output: path.join(work, 'out', String(i)) } }, expected: { state: 'FINISHED' }, cancel: false };
    case 'synthetic': {
      const records = 2000 + i;
      const check = (r: unknown[]): void => expect((r as [number, number][]).reduce((s, [n]) => s + n, 0)).toBe(records);
      return { body: { ...base, job: 'synthetic', params: { records, keys: 50 } }, expected: { state: 'FINISHED', check }, cancel: false };
    }
    case 'join':
      return { body: { ...base, job: 'join', params: { customers: 100, orders: 1000 } }, expected: { state: 'FINISHED', check: (r) => expect(r).toHaveLength(JOINED) }, cancel: false };
    case 'sort':
      return { body: { ...base, job: 'sort', params: { records: 2000, seed: i } }, expected: { state: 'FINISHED', check: (r) => expect(r).toHaveLength(2000) }, cancel: false };
    case 'module': {
      const n = i % MODULES.length;
      const check = (r: unknown[]): void => expect((r as [number, number][]).reduce((s, [, v]) => s + v, 0)).toBe(sumOfSquares(500) + 500 * n);
      // Uploaded again before each use: an upload of a kept module is a use.
      return { body: { ...base, module: hashes.modules[n], params: { n: 500 } }, expected: { state: 'FINISHED', check }, cancel: false, upload: MODULES[n] };
    }
    case 'failing':
      // Uploaded again before each use too: a submission takes a sandboxed load, and the TTL is short.
      return { body: { ...base, module: hashes.failing, restart: { strategy: 'none' } }, expected: { state: 'FAILED' }, cancel: false, upload: FAILING };
    case 'canceled':
      return { body: { ...base, job: 'synthetic', params: { records: 50_000_000, keys: 50 } }, expected: { state: 'CANCELED' }, cancel: true };
  }
}

/** Orders of the join whose customer exists. */
const JOINED = (() => {
  const ids = new Set([...customers(100)].map(([id]) => id));
  return [...orders(1000, 100)].filter(([id]) => ids.has(id)).length;
})();

function sumOfSquares(n: number): number {
  let sum = 0;
  for (let x = 0; x < n; x++) sum += x * x;
  return sum;
}

function expectWords(records: unknown[]): void {
  const counts = new Map(records as [string, number][]);
  expect(counts.get('alpha')).toBe(300);
  expect(counts.get('beta')).toBe(200);
  expect(counts.get('gamma')).toBe(100);
}

/** Runs one job to its end and checks its state and result. */
async function runOne(i: number, hashes: { modules: string[]; failing: string }): Promise<void> {
  const { body, expected, cancel, upload } = jobOf(i, hashes);
  if (upload !== undefined) expect(await uploadModule(url, upload)).toBe(body.module);
  const id = await submitJob(url, body);
  if (cancel) await callJson('POST', `${url}/jobs/${id}/cancel`, {});
  const status = await waitFor(url, id, 60_000);
  expect(status.state, `job ${i} ${JSON.stringify(body)}: ${status.error}`).toBe(expected.state);
  if (expected.check) expected.check((await callJson<{ records: unknown[] }>('GET', `${url}/jobs/${id}/result`)).records);
}

/** Runs jobs [from, to) with IN_FLIGHT at a time. */
async function runJobs(from: number, to: number, hashes: { modules: string[]; failing: string }): Promise<void> {
  let next = from;
  const lane = async (): Promise<void> => {
    while (next < to) await runOne(next++, hashes);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
}

interface Level {
  heapUsed: number;
  processes: ProcessStats[];
  /** What each process's descriptors are, to name the ones that are new in a failure. */
  descriptors: string[][];
}

/** The JobManager's heap after a forced GC, and every process's descriptors and threads, once idle. */
async function level(): Promise<Level> {
  const { heapUsed } = await callJson<{ heapUsed: number }>('POST', `${url}/internal/debug/gc`, {});
  const processes = cluster.processes.map((child) => processStats(child.pid!));
  return { heapUsed, processes, descriptors: cluster.processes.map((child) => openDescriptors(child.pid!)) };
}

/** Waits (a control-plane connection closes 5 s after its last use) until no process holds more than at the baseline. */
async function settledAtOrBelow(baseline: Level): Promise<Level> {
  let now = baseline;
  const atOrBelow = async (): Promise<boolean> => {
    now = await level();
    return now.processes.every((p, i) => p.fds <= baseline.processes[i].fds && p.threads <= baseline.processes[i].threads);
  };
  // Past the timeout the assertions that follow name what is left.
  await eventually('every process back at or below its baseline', atOrBelow, { everyMs: 500 }).catch(() => undefined);
  return now;
}

let ownDispatcher: Dispatcher;

const test = clusterTest({
  taskManagers: 2,
  slots: 2,
  memory: '32mb',
  jobManagerArgs: ['--job-history', String(JOB_HISTORY), '--module-ttl', String(MODULE_TTL_MS), '--history-bytes', '1mb'],
  jobManagerNodeArgs: ['--max-old-space-size=256', '--expose-gc'],
});

test.beforeAll(async ({ cluster: started }) => {
  // This test's own calls share one connection per process: the connections it counts are the cluster's.
  ownDispatcher = getGlobalDispatcher();
  setGlobalDispatcher(new Agent({ connections: 1 }));
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-soak-'));
  text = path.join(work, 'words.txt');
  fs.writeFileSync(text, 'alpha beta gamma alpha\nbeta alpha\n'.repeat(100));
  cluster = started;
  url = cluster.url;
}, 60_000);

afterAll(async () => {
  fs.rmSync(work, { recursive: true, force: true });
  const agent = getGlobalDispatcher();
  setGlobalDispatcher(ownDispatcher);
  await agent.close();
});

test(`${JOBS} jobs of every kind (modules, failures, cancels): the JobManager's heap, every process's descriptors and threads stay level, nothing is left behind`, async () => {
  const hashes = { modules: await Promise.all(MODULES.map((source) => uploadModule(url, source))), failing: await uploadModule(url, FAILING) };
  const started = Date.now();
  await runJobs(0, BASELINE_AT, hashes);
  // Each TaskManager keeps up to twice its slots of idle task threads, each with descriptors of its own. A job of 2
  // stages on every slot leaves that many idle, so the baseline counts a full pool, more than the end can hold.
  expect((await waitFor(url, await submitJob(url, { job: 'wordcount', params: { input: text }, parallelism: 4 }), 60_000)).state).toBe('FINISHED');
  // A pause, not a wait: the control-plane connections of that job close 5 s after their last use, and a baseline
  // taken sooner would count them (a more lenient baseline, never a failure).
  await sleep(6000);
  const baseline = await level();
  await runJobs(BASELINE_AT, JOBS, hashes);
  const end = await settledAtOrBelow(baseline);
  const seconds = (Date.now() - started) / 1000;
  console.log(`soak: ${JOBS} jobs in ${seconds.toFixed(1)} s; heap ${baseline.heapUsed} -> ${end.heapUsed} bytes`);

  expect(end.heapUsed, 'jobmanager heap after GC, at most 10% above its level after the first jobs').toBeLessThanOrEqual(baseline.heapUsed * 1.1);
  cluster.processes.forEach((_child, i) => {
    const name = i === 0 ? 'jobmanager' : `taskmanager ${i}`;
    const added = end.descriptors[i].filter((d) => !baseline.descriptors[i].includes(d)).map(withPeer);
    expect(end.processes[i].fds, `${name} descriptors, new since the baseline: ${added.join(' ')}`).toBeLessThanOrEqual(baseline.processes[i].fds);
    expect(end.processes[i].threads, `${name} threads`).toBeLessThanOrEqual(baseline.processes[i].threads);
  });
  await expectTaskManagersIdle(url);
  const { jobs } = await callJson<{ jobs: { id: string }[] }>('GET', `${url}/jobs`);
  expect(jobs, 'jobs kept: --job-history').toHaveLength(JOB_HISTORY);
  expect(Number(/^job-(\d+)-/.exec(jobs.at(-1)!.id)![1]), 'the last job number: the jobs and the one that fills the pools').toBe(JOBS + 1);

  // No kept job runs a module any more: past the TTL every module goes, here and on every TaskManager.
  const gone = async (hash: string): Promise<boolean> => callJson('GET', `${url}/modules/${hash}`).then(() => false, (error: unknown) => error instanceof HttpError && error.status === 404);
  for (const hash of [...hashes.modules, hashes.failing]) await eventually(`module ${hash} dropped past --module-ttl`, () => gone(hash), { everyMs: 100 });
  // node_modules holds only the link through which stored modules import `spillway`.
  const copies = (dir: string): string[] => listOrEmpty(dir).filter((f) => f !== 'node_modules');
  for (let i = 0; i < 2; i++) await eventually(`taskmanager ${i + 1} module copies dropped`, () => copies(path.join(cluster.taskManagerDir(i), 'modules')).length === 0, { everyMs: 100 });
  await eventually('jobmanager module copies dropped', () => copies(path.join(cluster.jobManagerDir, 'imports')).length === 0, { everyMs: 100 });
}, 150_000);

/** A TCP socket with the process at its other end, if it is this test or a cluster process. */
function withPeer(descriptor: string): string {
  const match = /^tcp (\d+)->(\d+)/.exec(descriptor);
  if (!match) return descriptor;
  const candidates = [{ name: 'this test', pid: process.pid }, ...cluster.processes.map((child, i) => ({ name: i === 0 ? 'jobmanager' : `taskmanager ${i}`, pid: child.pid! }))];
  const peer = candidates.find(({ pid }) => openDescriptors(pid).some((d) => d.startsWith(`tcp ${match[2]}->${match[1]}`)));
  return `${descriptor} (from ${peer?.name ?? 'another process'})`;
}

function listOrEmpty(dir: string): string[] {
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

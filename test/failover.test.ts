import { afterAll, beforeAll, expect, test } from 'vitest';
import { LocalCluster } from '../src/cli/LocalCluster.js';
import { callJson } from '../src/job/Http.js';

const HEARTBEAT_TIMEOUT = 3000;
let cluster: LocalCluster;
let url: string;

beforeAll(async () => {
  cluster = new LocalCluster({ taskManagers: 2, slots: 2, memory: '64mb', heartbeatTimeoutMs: HEARTBEAT_TIMEOUT, stdio: 'ignore' });
  url = await cluster.start();
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface TaskManagerView {
  id: string;
  host: string;
  httpPort: number;
}

async function startBigJob(): Promise<string> {
  const { id } = await callJson<{ id: string }>('POST', `${url}/jobs`, {
    job: 'synthetic',
    params: { records: 500_000_000, keys: 1000 },
    parallelism: 4,
    exchange: 'blocking',
  });
  const deadline = Date.now() + 30_000;
  while ((await callJson<{ state: string }>('GET', `${url}/jobs/${id}`)).state !== 'RUNNING' && Date.now() < deadline) await sleep(50);
  await sleep(1500);
  return id;
}

async function waitWhileRunning(id: string, since: number): Promise<{ state: string; error?: string }> {
  let status: { state: string; error?: string };
  do {
    await sleep(100);
    status = await callJson('GET', `${url}/jobs/${id}`);
  } while (status.state === 'RUNNING' && Date.now() - since < HEARTBEAT_TIMEOUT + 5000);
  return status;
}

test('a task that keeps its event loop busy longer than the heartbeat timeout does not get its TaskManager declared lost', async () => {
  const busy = `export default { name: 'busy', stages: [
    { name: 'one', source: { generate: function* (i) { if (i === 0) yield 1; } },
      operators: [{ map: (x) => { const end = Date.now() + ${HEARTBEAT_TIMEOUT + 1500}; while (Date.now() < end); return [x, 1]; } }] },
    { name: 'out', inputs: [{ from: 'one', partitioning: { type: 'rebalance' } }], sink: { collect: true } } ] };`;
  const { hash } = await callJson<{ hash: string }>('POST', `${url}/modules`, busy, { contentType: 'text/javascript' });
  const { id } = await callJson<{ id: string }>('POST', `${url}/jobs`, { module: hash, parallelism: 4 });
  const status = await waitWhileRunning(id, Date.now());
  expect(status.error).toBeUndefined();
  expect(status.state).toBe('FINISHED');
  const { taskmanagers } = await callJson<{ taskmanagers: TaskManagerView[] }>('GET', `${url}/taskmanagers`);
  expect(taskmanagers.map((t) => t.id)).toEqual(['tm-0001', 'tm-0002']);
}, 60_000);

test('a TaskManager that stops answering fails the job within the heartbeat timeout; when it wakes it drops its work and registers again', async () => {
  const id = await startBigJob();
  const sleeper = cluster.processes[1];
  const stoppedAt = Date.now();
  sleeper.kill('SIGSTOP');
  try {
    const status = await waitWhileRunning(id, stoppedAt);
    expect(status.state).toBe('FAILED');
    expect(status.error).toMatch(/tm-\d+.*lost: no heartbeat for 3000 ms|127\.0\.0\.1:\d+/);
  } finally {
    sleeper.kill('SIGCONT');
  }
  let taskmanagers: TaskManagerView[] = [];
  for (let i = 0; i < 100 && taskmanagers.length < 2; i++) {
    await sleep(100);
    ({ taskmanagers } = await callJson<{ taskmanagers: TaskManagerView[] }>('GET', `${url}/taskmanagers`));
  }
  // The one that slept came back under a new id, having dropped all it held.
  expect(taskmanagers).toHaveLength(2);
  const rejoined = taskmanagers.find((t) => t.id === 'tm-0003');
  expect(rejoined).toBeDefined();
  await expectIdle(rejoined!);
  const { id: next } = await callJson<{ id: string }>('POST', `${url}/jobs`, { job: 'synthetic', params: { records: 100_000, keys: 100 }, parallelism: 4 });
  const done = await waitWhileRunning(next, Date.now());
  expect(done.state).toBe('FINISHED');
  const summaries = (await callJson<{ records: [number, number][] }>('GET', `${url}/jobs/${next}/result`)).records;
  expect(summaries.reduce((sum, [records]) => sum + records, 0)).toBe(100_000);
}, 60_000);

test('a TaskManager killed with SIGKILL mid-job fails the job within the heartbeat timeout, and the survivor releases everything', async () => {
  const id = await startBigJob();
  const victim = cluster.processes[2];
  const killedAt = Date.now();
  victim.kill('SIGKILL');
  const status = await waitWhileRunning(id, killedAt);
  expect(status.state).toBe('FAILED');
  expect(status.error).toMatch(/tm-\d+|127\.0\.0\.1:\d+/);
  const { taskmanagers } = await callJson<{ taskmanagers: TaskManagerView[] }>('GET', `${url}/taskmanagers`);
  expect(taskmanagers).toHaveLength(1);
  await expectIdle(taskmanagers[0]);
}, 60_000);

/** The TaskManager holds no partition, no spill file and no buffer (waiting a little for releases to land). */
async function expectIdle(tm: TaskManagerView): Promise<void> {
  const statusUrl = `http://${tm.host}:${tm.httpPort}/status`;
  let idle: { partitions: string[]; spillFiles: string[]; segmentsInUse: number } = await callJson('GET', statusUrl);
  for (let i = 0; i < 50 && (idle.partitions.length > 0 || idle.spillFiles.length > 0 || idle.segmentsInUse > 0); i++) {
    await sleep(100);
    idle = await callJson('GET', statusUrl);
  }
  expect(idle.partitions).toEqual([]);
  expect(idle.spillFiles).toEqual([]);
  expect(idle.segmentsInUse).toBe(0);
}

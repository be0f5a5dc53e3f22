import { transpileJob } from '../../src/cli/TypeScriptJob.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, setGlobalDispatcher } from 'undici';
import { afterAll, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { writeCorpus } from '../../src/job/Corpus.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { expectCounts, expectFinished, expectTaskManagersIdle, referenceCount, result, submitJob, uploadModule, waitFor, waitForTaskManagers, waitRunning } from '../helpers/jobs.js';

let cluster: LocalCluster;
let url: string;
let work: string;
let corpus: string;
let reference: Map<string, number>;

const FAILING = `export default { name: 'failing', stages: [
  { name: 'gen', source: { kind: 'generate', generate: function* () { for (let i = 0; i < 1000; i++) yield i; } },
    operators: [{ map: (x) => { if (x === 500) throw new Error('boom at 500'); return [x % 10, 1]; } }] },
  { name: 'count', inputs: [{ from: 'gen', partitioning: { type: 'hash', key: (r) => r[0] } }], sink: { kind: 'collect' } } ] };`;

const test = clusterTest({ taskManagers: 2, slots: 2, memory: '64mb' });

test.beforeAll(async ({ cluster: started }) => {
  // A fresh connection per call: one kept to the killed JobManager would fail the first call to the new one.
  setGlobalDispatcher(new Agent({ pipelining: 0 }));
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-restart-'));
  corpus = path.join(work, 'corpus');
  writeCorpus(corpus, 4, 256 << 10, 5);
  reference = referenceCount(corpus);
  cluster = started;
  url = cluster.url;
}, 60_000);

afterAll(async () => {
  fs.rmSync(work, { recursive: true, force: true });
});

test('a JobManager killed mid-job and started again on its data dir answers for every job, keeps results and modules, and its TaskManagers rejoin', async () => {
  const wordCountModule = await transpileJob('examples/wordcount.ts', fs.readFileSync('examples/wordcount.ts', 'utf8'));
  const hash = await uploadModule(url, wordCountModule);
  const collected = await submitJob(url, { job: 'wordcount', params: { input: corpus }, parallelism: 4 });
  await expectFinished(url, collected);
  const byModule = await submitJob(url, { module: hash, params: { input: corpus }, parallelism: 4 });
  await expectFinished(url, byModule);
  const failingHash = await uploadModule(url, FAILING);
  const failed = await submitJob(url, { module: failingHash, parallelism: 2, restart: { strategy: 'none' } });
  expect((await waitFor(url, failed)).state).toBe('FAILED');
  const running = await submitJob(url, { job: 'synthetic', params: { records: 500_000_000, keys: 1000 }, parallelism: 4, exchange: 'blocking' });
  await waitRunning(url, running);
  // Waits for slots (all 4 are taken) and is canceled before the restart.
  const canceled = await submitJob(url, { job: 'synthetic', params: { records: 1000 }, parallelism: 4 });
  await callJson('POST', `${url}/jobs/${canceled}/cancel`, {});

  expect(await cluster.restartJobManager()).toBe(url);

  const runningNow = await callJson<{ state: string; error?: string }>('GET', `${url}/jobs/${running}`);
  expect(runningNow.state).toBe('FAILED');
  expect(runningNow.error).toBe('JobManager restarted');
  const { jobs } = await callJson<{ jobs: { id: string; state: string }[] }>('GET', `${url}/jobs`);
  expect(jobs.map((j) => [j.id, j.state])).toEqual([
    [collected, 'FINISHED'],
    [byModule, 'FINISHED'],
    [failed, 'FAILED'],
    [running, 'FAILED'],
    [canceled, 'CANCELED'],
  ]);
  expect((await callJson<{ error: string }>('GET', `${url}/jobs/${failed}`)).error).toMatch(/boom at 500/);
  expectCounts(await result<[string, number]>(url, collected), reference);
  expectCounts(await result<[string, number]>(url, byModule), reference);

  // The TaskManagers notice the new JobManager, drop the old job's work and register again by themselves.
  const rejoined = await waitForTaskManagers(url, 2);
  expect(rejoined).toHaveLength(2);
  await expectTaskManagersIdle(url);
  const again = await submitJob(url, { module: hash, params: { input: corpus }, parallelism: 4 });
  await expectFinished(url, again);
  expectCounts(await result<[string, number]>(url, again), reference);
  const next = await submitJob(url, { job: 'wordcount', params: { input: corpus }, parallelism: 4 });
  const status = await expectFinished(url, next);
  expect(new Set(status.tasks.map((t) => t.taskManager)).size).toBe(2);
  expectCounts(await result<[string, number]>(url, next), reference);
  // Job numbers go on from where the first JobManager stopped: no id is given twice.
  expect(Number(/^job-(\d+)-/.exec(next)![1])).toBeGreaterThan(Number(/^job-(\d+)-/.exec(canceled)![1]));
}, 90_000);

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { sortInput } from '../../src/job/builtins/Sort.js';
import { callJson, HttpError } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { expectFinished, failure, result, submitJob, uploadModule } from '../helpers/jobs.js';

const JOB_HISTORY = 4;
const MODULE_TTL_MS = 1000;
let cluster: LocalCluster;
let url: string;

const test = clusterTest({
  taskManagers: 1,
  slots: 2,
  memory: '32mb',
  jobManagerArgs: ['--job-history', String(JOB_HISTORY), '--history-bytes', '300kb', '--module-ttl', String(MODULE_TTL_MS)],
});

test.beforeAll(async ({ cluster: started }) => {
  cluster = started;
  url = cluster.url;
}, 60_000);


/** A sort of `records` records collected: about 14 bytes a record once packed. */
async function sortJob(records: number, seed: number): Promise<string> {
  const id = await submitJob(url, { job: 'sort', params: { records, seed }, parallelism: 2 });
  await expectFinished(url, id);
  return id;
}

function sorted(records: number, seed: number): [number, string][] {
  const all = [...sortInput(records, seed, 0, 2), ...sortInput(records, seed, 1, 2)];
  return all.sort((a, b) => a[0] - b[0]);
}

test('past --history-bytes the oldest results are dropped first: their job stays listed, its result is a 410 that says why', async () => {
  const first = await sortJob(10_000, 1);
  const second = await sortJob(10_000, 2);
  const third = await sortJob(10_000, 3);
  const { resultBytes } = await callJson<{ resultBytes: number }>('GET', `${url}/jobs/${third}`);
  expect(resultBytes).toBeGreaterThan(100 << 10);
  expect(resultBytes).toBeLessThan(150 << 10);
  const gone = await failure(callJson('GET', `${url}/jobs/${first}/result`));
  expect([gone.status, gone.code]).toEqual([410, 'SPW_ERR_RESULTS_DROPPED']);
  expect(gone.message).toMatch(/--history-bytes \(307200 bytes\)/);
  expect((await callJson<{ state: string }>('GET', `${url}/jobs/${first}`)).state).toBe('FINISHED');
  expect((await result<[number, string]>(url, second)).map((r) => r[0])).toEqual(sorted(10_000, 2).map((r) => r[0]));
  expect((await result<[number, string]>(url, third)).map((r) => r[0])).toEqual(sorted(10_000, 3).map((r) => r[0]));
});

test('past --job-history the oldest ended job is forgotten (404), and a module no kept job runs goes after --module-ttl, here and on the TaskManager', async () => {
  const source = `export default { name: 'tiny', stages: [
    { name: 'gen', source: { kind: 'generate', generate: function* (i) { yield [i, 1]; } } },
    { name: 'out', inputs: [{ from: 'gen', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } } ] };`;
  const hash = await uploadModule(url, source);
  const byModule = await submitJob(url, { module: hash, parallelism: 2 });
  await expectFinished(url, byModule);
  const copy = path.join(cluster.taskManagerDir(0), 'modules', `${hash}.mjs`);
  expect(fs.existsSync(copy)).toBe(true);
  // Kept while a kept job runs it, however old: still there once a module uploaded after it, that no job runs, went past its TTL.
  const witness = await uploadModule(url, `${source}\n// witness`);
  const gone = async (module: string): Promise<boolean> => (await callJson('GET', `${url}/modules/${module}`).then(() => false, (error: unknown) => error instanceof HttpError && error.status === 404));
  await eventually('a module no job runs dropped after --module-ttl', () => gone(witness), { everyMs: 100 });
  expect((await callJson<{ source: string }>('GET', `${url}/modules/${hash}`)).source).toBe(source);
  const later: string[] = [];
  for (let i = 0; i < JOB_HISTORY; i++) later.push(await sortJob(100, i));
  expect((await failure(callJson('GET', `${url}/jobs/${byModule}`))).status).toBe(404);
  const { jobs } = await callJson<{ jobs: { id: string }[] }>('GET', `${url}/jobs`);
  expect(jobs.map((j) => j.id)).toEqual(later);
  await eventually('the module dropped after --module-ttl, once no kept job runs it', () => gone(hash), { everyMs: 100 });
  await eventually('the TaskManager copy dropped', () => !fs.existsSync(copy), { everyMs: 100 });
  const dropped = await failure(callJson('GET', `${url}/modules/${hash}`));
  expect([dropped.status, dropped.code]).toEqual([404, 'SPW_ERR_MODULE_NOT_FOUND']);
  expect(fs.existsSync(copy), 'the TaskManager copy').toBe(false);
  const resubmitted = await failure(callJson('POST', `${url}/jobs`, { module: hash }));
  expect([resubmitted.status, resubmitted.code]).toEqual([400, 'SPW_ERR_MODULE']);
});

test('a JobManager started on a fresh port keeps its data in spillway-jobmanager-<port> under the temp dir, and says so', async () => {
  const child = spawn(process.execPath, ['bin/spillway.js', 'jobmanager', '--port', '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => resolve(chunk.toString()));
      child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
    });
    const match = /listening on http:\/\/127\.0\.0\.1:(\d+) with its data in (\S+)/.exec(line);
    expect(match, line).not.toBeNull();
    expect(match![2]).toBe(path.join(os.tmpdir(), `spillway-jobmanager-${match![1]}`));
    expect(fs.existsSync(path.join(match![2], 'data.mdb'))).toBe(true);
    fs.rmSync(match![2], { recursive: true, force: true });
  } finally {
    child.kill('SIGKILL');
  }
});

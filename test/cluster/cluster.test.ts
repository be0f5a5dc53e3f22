import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Agent, setGlobalDispatcher } from 'undici';
import { afterAll, describe, expect } from 'vitest';
import { LocalCluster } from '../../src/cli/LocalCluster.js';
import { writeCorpus, zipfCorpusText } from '../../src/job/Corpus.js';
import { callJson, HttpError } from '../../src/rpc/HttpClient.js';
import { customers, orders } from '../../src/job/builtins/Join.js';
import { sortInput } from '../../src/job/builtins/Sort.js';
import { clusterTest } from '../helpers/cluster.js';
import { waitUntil } from '../helpers/failover.js';
import {
  expectCounts,
  expectFinished,
  expectTaskManagersIdle,
  type JobStatus,
  referenceCount,
  result,
  submitJob,
  uploadModule,
  waitFor,
} from '../helpers/jobs.js';

const run = promisify(execFile);
const BIN = path.resolve('bin/spillway.js');

let cluster: LocalCluster;
let url: string;
let work: string;
let corpus: string;
let reference: Map<string, number>;

/** The index of the first key smaller than the one before it, or -1: one assertion, not one per key (200,000 of them kept the event loop busy for seconds). */
function firstOutOfOrder(keys: readonly number[]): number {
  return keys.findIndex((key, i) => i > 0 && keys[i - 1] > key);
}

async function expectBadRequest(body: unknown, pattern: RegExp, raw = false): Promise<void> {
  const error = await callJson('POST', `${url}/jobs`, raw ? (body as string) : body, raw ? { contentType: 'application/json' } : {}).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HttpError);
  expect((error as HttpError).status).toBe(400);
  expect((error as HttpError).message).toMatch(pattern);
}

const test = clusterTest({ taskManagers: 2, slots: 2, memory: '128mb' }, { leakCheck: true });

test.beforeAll(async ({ cluster: started }) => {
  // A fresh connection per call: checking a large result keeps this process's event loop busy for seconds, past the
  // JobManager's 5 s keep-alive, and a kept connection the server closed meanwhile would fail the next call.
  setGlobalDispatcher(new Agent({ pipelining: 0 }));
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-cluster-'));
  corpus = path.join(work, 'corpus');
  // The realistic corpus: non-ASCII words too, so every word count below is checked on them.
  writeCorpus(corpus, 5, 4 << 20, 7, zipfCorpusText);
  reference = referenceCount(corpus);
  cluster = started;
  url = cluster.url;
}, 60_000);

afterAll(async () => {
  fs.rmSync(work, { recursive: true, force: true });
});

describe('a JobManager and 2 TaskManagers with 2 slots each', () => {
  test.each(['pipelined', 'blocking'])('wordcount over a 20 MB corpus, parallelism 4, %s exchange, equals a reference count', async (exchange) => {
    const id = await submitJob(url, { job: 'wordcount', params: { input: corpus }, parallelism: 4, exchange });
    const status = await waitFor(url, id);
    expect(status.error).toBeUndefined();
    expect(status.state).toBe('FINISHED');
    expect(new Set(status.tasks.map((t) => t.taskManager)).size).toBe(2);
    expectCounts(await result<[string, number]>(url, id), reference);
  });

  test('wordcount to an output folder writes one part file per reducing task', async () => {
    const output = path.join(work, 'wc-out');
    const id = await submitJob(url, { job: 'wordcount', params: { input: corpus, output }, parallelism: 4 });
    await expectFinished(url, id);
    const parts = fs.readdirSync(output).sort();
    expect(parts).toEqual(['part-00000', 'part-00001', 'part-00002', 'part-00003']);
    const records = parts.flatMap((p) =>
      fs.readFileSync(path.join(output, p), 'utf8').split('\n').filter(Boolean).map((line) => {
        const [word, count] = line.split('\t');
        return [word, Number(count)] as [string, number];
      }),
    );
    expectCounts(records, reference);
  });

  test('sort: part files read in order are globally sorted and hold exactly the input', async () => {
    const output = path.join(work, 'sorted');
    const id = await submitJob(url, { job: 'sort', params: { records: 200_000, seed: 3, output }, parallelism: 4, exchange: 'blocking' });
    await expectFinished(url, id);
    const lines = fs
      .readdirSync(output)
      .sort()
      .flatMap((p) => fs.readFileSync(path.join(output, p), 'utf8').split('\n').filter(Boolean));
    const keys = lines.map((l) => Number(l.split('\t')[0]));
    expect(firstOutOfOrder(keys), 'the first key smaller than the one before it').toBe(-1);
    const expected: string[] = [];
    for (let s = 0; s < 4; s++) for (const [k, v] of sortInput(200_000, 3, s, 4)) expected.push(`${k}\t${v}`);
    expect([...lines].sort()).toEqual(expected.sort());
  });

  test('a pipelined job whose producers have nothing to send still finishes (an empty partition is announced)', async () => {
    const tiny = path.join(work, 'tiny.txt');
    fs.writeFileSync(tiny, 'one two two\n');
    const id = await submitJob(url, { job: 'wordcount', params: { input: tiny }, parallelism: 4, exchange: 'pipelined' });
    await expectFinished(url, id);
    expect((await result<[string, number]>(url, id)).sort()).toEqual([['one', 1], ['two', 2]]);
  });

  test('sort collected: the result is in subtask order, so globally sorted', async () => {
    const id = await submitJob(url, { job: 'sort', params: { records: 50_000, seed: 5 }, parallelism: 4 });
    await expectFinished(url, id);
    const keys = (await result<[number, string]>(url, id)).map((r) => r[0]);
    expect(keys).toHaveLength(50_000);
    expect(firstOutOfOrder(keys), 'the first key smaller than the one before it').toBe(-1);
  });

  test('a join whose two inputs descend from one source (a diamond) does not deadlock when pipelined', async () => {
    const diamond = `export default { name: 'diamond', stages: [
      { name: 'numbers', source: { kind: 'generate', generate: function* (i, n) { for (let x = i; x < 300000; x += n) yield x; } } },
      { name: 'evens', inputs: [{ from: 'numbers', partitioning: { type: 'forward' } }], operators: [{ filter: (x) => x % 2 === 0 }, { map: (x) => [x, 'even'] }] },
      { name: 'tens', inputs: [{ from: 'numbers', partitioning: { type: 'forward' } }], operators: [{ filter: (x) => x % 10 === 0 }, { map: (x) => [x, 'ten'] }] },
      { name: 'both', inputs: [{ from: 'evens', partitioning: { type: 'hash', key: (r) => r[0] } }, { from: 'tens', partitioning: { type: 'hash', key: (r) => r[0] } }],
        operators: [{ join: { keys: [(r) => r[0], (r) => r[0]], combine: (a) => a[0] } }], sink: { kind: 'collect' } } ] };`;
    const hash = await uploadModule(url, diamond);
    const id = await submitJob(url, { module: hash, parallelism: 4, exchange: 'pipelined' });
    await expectFinished(url, id);
    const got = (await result<number>(url, id)).sort((a, b) => a - b);
    expect(got).toEqual(Array.from({ length: 30_000 }, (_, i) => i * 10));
  });

  test('join equals a reference join', async () => {
    const id = await submitJob(url, { job: 'join', params: { customers: 5000, orders: 50_000 }, parallelism: 4 });
    await expectFinished(url, id);
    const names = new Map([...customers(5000)].map(([cid, name]) => [cid, name]));
    const expected = [...orders(50_000, 5000)].filter(([cid]) => names.has(cid)).map(([cid, amount]) => `${cid},${names.get(cid)},${amount}`);
    const got = (await result<[number, string, number]>(url, id)).map((r) => r.join(','));
    expect(got.sort()).toEqual(expected.sort());
  });

  test('a user job module submitted with `spillway submit FILE --wait` runs on both TaskManagers', async () => {
    const { stdout } = await run(process.execPath, [BIN, 'submit', 'examples/wordcount.ts', '--jobmanager', url, '--param', `input=${corpus}`, '--parallelism', '4', '--wait']);
    expect(stdout).toMatch(/FINISHED/);
    const id = /submitted (\S+)/.exec(stdout)![1];
    const status = await callJson<JobStatus>('GET', `${url}/jobs/${id}`);
    expect(new Set(status.tasks.map((t) => t.taskManager)).size).toBe(2);
    expectCounts(await result<[string, number]>(url, id), reference);
  });

  test('bad input is a 400 that names the problem, and the cluster then runs a good job', async () => {
    await expectBadRequest('{"job": "wordcount", ', /JSON/i, true);
    await expectBadRequest({ job: 'nosuchjob' }, /unknown job "nosuchjob"/);
    await expectBadRequest({ job: 'wordcount', params: { input: corpus }, parallelism: 0 }, /parallelism/);
    await expectBadRequest({ job: 'wordcount', params: { input: path.join(work, 'missing') } }, /does not exist/);
    await expectBadRequest({ job: 'wordcount', params: {} }, /"input"/);
    const cyclic = `export default { name: 'cyclic', stages: [
      { name: 'a', inputs: [{ from: 'b', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } },
      { name: 'b', inputs: [{ from: 'a', partitioning: { type: 'rebalance' } }] } ] };`;
    const hash = await uploadModule(url, cyclic);
    await expectBadRequest({ module: hash }, /cycle: (a -> b -> a|b -> a -> b)/);
    const id = await submitJob(url, { job: 'wordcount', params: { input: corpus }, parallelism: 4 });
    await expectFinished(url, id);
    expectCounts(await result<[string, number]>(url, id), reference);
  });

  test('a job that fails at run time is FAILED with the error, and the next job runs', async () => {
    const failing = `export default { name: 'failing', stages: [
      { name: 'gen', source: { kind: 'generate', generate: function* () { for (let i = 0; i < 100000; i++) yield i; } },
        operators: [{ map: (x) => { if (x === 5000) throw new Error('boom at 5000'); return [x % 10, 1]; } }] },
      { name: 'count', inputs: [{ from: 'gen', partitioning: { type: 'hash', key: (r) => r[0] } }], sink: { kind: 'collect' } } ] };`;
    const hash = await uploadModule(url, failing);
    const status = await waitFor(url, await submitJob(url, { module: hash, parallelism: 4, restart: { strategy: 'none' } }));
    expect(status.state).toBe('FAILED');
    expect(status.error).toMatch(/boom at 5000.*task job-\S+\.gen\.\d attempt 0 on taskmanager tm-.*restart strategy none/);
    const id = await submitJob(url, { job: 'synthetic', params: { records: 100_000, keys: 1000 }, parallelism: 4 });
    await expectFinished(url, id);
  });

  test('cancel mid-job: CANCELED, no spill file left, every buffer back', async () => {
    const id = await submitJob(url, { job: 'synthetic', params: { records: 200_000_000, keys: 1000 }, parallelism: 4, exchange: 'blocking' });
    // Mid-job: the producers have written records (a heartbeat reports them).
    await waitUntil(url, id, (job) => job.tasks.some((t) => t.counters.recordsOut > 0), 'records written');
    await callJson('POST', `${url}/jobs/${id}/cancel`, {});
    const status = await waitFor(url, id);
    expect(status.state).toBe('CANCELED');
    await expectTaskManagersIdle(url);
  });

  test('10 jobs submitted at once all finish with correct results', async () => {
    const ids = await Promise.all(
      Array.from({ length: 10 }, (_, i) => submitJob(url, { job: 'synthetic', params: { records: 50_000 + i, keys: 100 + i }, parallelism: 2 + (i % 3) })),
    );
    for (const [i, id] of ids.entries()) {
      const status = await waitFor(url, id);
      expect(status.state, status.error).toBe('FINISHED');
      const summaries = await result<[number, number]>(url, id);
      expect(summaries.reduce((s, r) => s + r[0], 0)).toBe(50_000 + i);
      expect(summaries.reduce((s, r) => s + r[1], 0)).toBe(100 + i);
    }
    await expectTaskManagersIdle(url);
  });
});

test('a local cluster of 3 TaskManagers adds one exit listener to this process, not one per child, and stop() removes it', async () => {
  const before = process.listenerCount('exit');
  const small = new LocalCluster({ taskManagers: 3, slots: 1, memory: '32mb', stdio: 'ignore' });
  try {
    await small.start();
    expect(process.listenerCount('exit')).toBe(before + 1);
  } finally {
    await small.stop();
  }
  expect(process.listenerCount('exit')).toBe(before);
});

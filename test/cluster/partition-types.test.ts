/**
 * Partition types chosen per edge, in a JobManager and 2 TaskManager processes that
 * loaded a type from outside the engine with `--partition-type FILE`: exact results
 * over local and remote channels, GET /jobs/:id naming each edge's type, compression
 * on the job or an input, and a clear 400 for a type nobody registered.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, describe, expect } from 'vitest';
import type { LocalCluster } from '../../src/cli/LocalCluster.js';
import { writeCorpus, zipfCorpusText } from '../../src/job/Corpus.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { expectCounts, expectFinished, expectTaskManagersIdle, failure, referenceCount, result, submitJob, uploadModule } from '../helpers/jobs.js';

/** Built by `npm run build` from test/fixtures/InMemoryPartitionType.ts. */
const IN_MEMORY_TYPE = path.resolve('dist/test/fixtures/InMemoryPartitionType.js');

/**
 * N numbers, counted by key through three exchanges of three types: a keyed count over
 * sort-merge (compressed), a rebalance over hybrid, a keyed sum over the loaded type.
 */
const CHAIN_JOB = `
export default (params) => {
  const n = Number(params.records);
  return {
    name: 'three-types',
    stages: [
      { name: 'numbers', source: { kind: 'generate', generate: function* (subtask, parallelism) { for (let i = subtask; i < n; i += parallelism) yield [i % 1000, 1]; } } },
      { name: 'count', inputs: [{ from: 'numbers', partitioning: { type: 'hash', key: (r) => r[0] }, exchange: 'sort-merge', compression: true }],
        operators: [{ reduceByKey: { key: (r) => r[0], reduce: (a, b) => [a[0], a[1] + b[1]] } }] },
      { name: 'fold', inputs: [{ from: 'count', partitioning: { type: 'rebalance' }, exchange: 'hybrid' }],
        operators: [{ map: (r) => [r[0] % 10, r[1]] }] },
      { name: 'total', inputs: [{ from: 'fold', partitioning: { type: 'hash', key: (r) => r[0] }, exchange: 'in-memory' }],
        operators: [{ reduceByKey: { key: (r) => r[0], reduce: (a, b) => [a[0], a[1] + b[1]] } }], sink: { kind: 'collect' } },
    ],
  };
};
`;

interface TaskTimes {
  stage: string;
  subtask: number;
  started?: number;
  ended?: number;
}

interface EdgeView {
  from: string;
  to: string;
  type: string;
  pipelined: boolean;
  reReadable: boolean;
  compression: string | false;
}

let cluster: LocalCluster;
let url: string;
let work: string;
let corpus: string;
let reference: Map<string, number>;
let ownDispatcher: Dispatcher;

const test = clusterTest({ taskManagers: 2, slots: 2, memory: '64mb', extraArgs: ['--partition-type', IN_MEMORY_TYPE] });

test.beforeAll(async ({ cluster: started }) => {
  // Idle connections close here well within the JobManager's 5 s: on a loaded machine a
  // late timer would otherwise send a call down a connection the server just closed.
  ownDispatcher = getGlobalDispatcher();
  setGlobalDispatcher(new Agent({ keepAliveTimeout: 1000, keepAliveMaxTimeout: 1000 }));
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-partition-types-'));
  // Made before any call: seconds of synchronous work between two calls can outlast the
  // JobManager's 5 s keep-alive and make the next call meet a connection it just closed.
  corpus = path.join(work, 'corpus');
  writeCorpus(corpus, 3, 2 << 20, 11, zipfCorpusText);
  reference = referenceCount(corpus);
  cluster = started;
  url = cluster.url;
}, 60_000);

afterAll(async () => {
  fs.rmSync(work, { recursive: true, force: true });
  const agent = getGlobalDispatcher();
  setGlobalDispatcher(ownDispatcher);
  await agent.close();
});

describe('partition types chosen per edge, across 2 TaskManagers', () => {
  test('sort-merge, hybrid and a type loaded with --partition-type on one job, parallelism 4: exact, and each edge shows its type', async () => {
    const records = 200_000;
    const id = await submitJob(url, { module: await uploadModule(url, CHAIN_JOB), params: { records }, parallelism: 4 });
    await expectFinished(url, id);
    const totals = new Map(await result<[number, number]>(url, id));
    expect(totals).toEqual(new Map(Array.from({ length: 10 }, (_, k) => [k, records / 10])));
    const { edges } = await callJson<{ edges: EdgeView[] }>('GET', `${url}/jobs/${id}`);
    expect(edges.map(({ from, to, type, pipelined, reReadable, compression }) => ({ from, to, type, pipelined, reReadable, compression }))).toEqual([
      { from: 'numbers', to: 'count', type: 'sort-merge', pipelined: false, reReadable: true, compression: 'snappy' },
      { from: 'count', to: 'fold', type: 'hybrid', pipelined: true, reReadable: true, compression: false },
      { from: 'fold', to: 'total', type: 'in-memory', pipelined: false, reReadable: true, compression: false },
    ]);
    await expectTaskManagersIdle(url);
  }, 120_000);

  test.each([
    ['sort-merge', true, 'snappy'],
    ['hybrid', 'brotli', 'brotli'],
    ['blocking', 'brotli', 'brotli'],
  ] as const)('wordcount with the job default %s and compression %s: equals a reference count', async (exchange, asked, codec) => {
    const id = await submitJob(url, { job: 'wordcount', params: { input: corpus }, parallelism: 4, exchange, compression: asked });
    await expectFinished(url, id);
    expectCounts(await result<[string, number]>(url, id), reference);
    const job = await callJson<{ edges: EdgeView[]; compression: string | false; started: number; ended: number; tasks: TaskTimes[] }>('GET', `${url}/jobs/${id}`);
    expect(job.compression).toBe(codec);
    expect(job.edges.every((e) => e.type === exchange && e.compression === codec)).toBe(true);
    // Each task's own start and end (its TaskManager's clock: this machine's) lie within the job's.
    for (const task of job.tasks) {
      const times = [job.started, task.started, task.ended, job.ended];
      expect(times.every((t) => typeof t === 'number')).toBe(true);
      expect(times, `${task.stage} ${task.subtask}`).toEqual([...times].sort((a, b) => a! - b!));
    }
  }, 120_000);

  test('compression asked of a pipelined edge is off, as in Flink', async () => {
    const id = await submitJob(url, { job: 'synthetic', params: { records: 20_000, recordSize: 50, keys: 100 }, parallelism: 2, compression: true });
    await expectFinished(url, id);
    const { edges } = await callJson<{ edges: EdgeView[] }>('GET', `${url}/jobs/${id}`);
    expect(edges.map((e) => [e.type, e.compression])).toEqual(edges.map(() => ['pipelined', false]));
  }, 60_000);

  test('an unknown partition type, for the job or for one input, is a 400 that names it and the known types', async () => {
    const job = await failure(submitJob(url, { job: 'wordcount', params: { input: work }, exchange: 'shuffle-hash' }));
    expect(job.status).toBe(400);
    expect(job.message).toMatch(/exchange: unknown partition type "shuffle-hash"; known types are pipelined, blocking, sort-merge, hybrid, in-memory/);
    const edge = CHAIN_JOB.replace("exchange: 'hybrid'", "exchange: 'hybird'");
    const input = await failure(submitJob(url, { module: await uploadModule(url, edge), params: { records: 10 } }));
    expect(input.status).toBe(400);
    expect(input.message).toMatch(/stage "fold": the input from "count": unknown partition type "hybird"/);
    const flag = await failure(submitJob(url, { job: 'wordcount', params: { input: work }, compression: 'yes' }));
    expect(flag.status).toBe(400);
    expect(flag.message).toMatch(/compression must be true, false or a codec \(snappy, brotli\), not "yes"/);
    const onEdge = await failure(submitJob(url, { module: await uploadModule(url, CHAIN_JOB.replace('compression: true', "compression: 'lz5'")), params: { records: 10 } }));
    expect(onEdge.status).toBe(400);
    expect(onEdge.message).toMatch(/stage "count": its input from "numbers": compression must be true, false or a codec \(snappy, brotli\), not "lz5"/);
  }, 60_000);
});

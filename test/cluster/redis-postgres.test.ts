/**
 * The Redis Streams and PostgreSQL connectors on a LocalCluster of 2 TaskManagers: the
 * examples (one submitted as a user submits it, `spillway submit examples/...`, the others
 * transpiled here and uploaded, as the command does), and a job from Redis streams into
 * PostgreSQL; every record once. Each test in a key prefix and a schema of its own,
 * removed after it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, onTestFinished } from 'vitest';
import { transpileJob } from '../../src/cli/TypeScriptJob.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { spillway } from '../helpers/command.js';
import { expectFinished, submitJob, uploadModule, waitFor } from '../helpers/jobs.js';
import { postgresScope, redisScope } from '../helpers/services.js';
import { eventually } from '../helpers/eventually.js';

/** An example as `spillway submit` uploads it: its types stripped. */
async function example(url: string, name: string): Promise<string> {
  const file = `examples/${name}`;
  return uploadModule(url, await transpileJob(file, fs.readFileSync(file, 'utf8')));
}

const test = clusterTest({ taskManagers: 2, slots: 2, extraArgs: ['--cancel-timeout', '5000'] }, { leakCheck: true })
  // eslint-disable-next-line no-empty-pattern -- vitest reads a fixture's dependencies from this pattern: none
  .extend('redis', async ({}, { onCleanup }) => redisScope(onCleanup))
  // eslint-disable-next-line no-empty-pattern -- as above
  .extend('postgres', async ({}, { onCleanup }) => postgresScope(onCleanup));

test('examples/big-orders.ts copies the orders over a threshold from 3 Redis streams to one across 2 TaskManagers, each once', async ({ cluster, redis }) => {
  const streams = ['eu', 'us', 'asia'].map((s) => redis.key(s));
  const expected: string[] = [];
  for (const [s, stream] of streams.entries()) {
    const pipeline = redis.client.pipeline();
    for (let n = 0; n < 2000; n++) {
      const amount = ((n * 37 + s * 11) % 20_000) / 100;
      pipeline.xadd(stream, '*', 'customer', `c${n % 50}`, 'amount', amount.toFixed(2));
      if (amount > 100) expected.push(`${stream}:${n}:${Math.round(amount * 100)}`);
    }
    await pipeline.exec();
  }
  const output = redis.key('big');
  const run = await spillway('submit', 'examples/big-orders.ts', '--jobmanager', cluster.url, '--param', `redis=${redis.url}`, '--param', `streams=${streams.join(',')}`, '--param', `output=${output}`, '--parallelism', '4', '--wait');
  expect(run.code, run.stderr).toBe(0);
  const written = await redis.client.xrange(output, '-', '+');
  const ids = new Map<string, number>();
  for (const stream of streams) (await redis.client.xrange(stream, '-', '+')).forEach(([id], n) => ids.set(`${stream}/${id}`, n));
  const got = written.map(([, flat]) => {
    const fields = Object.fromEntries([0, 2, 4].map((i) => [flat[i], flat[i + 1]]));
    const [stream] = fields.source.split('/');
    return `${stream}:${ids.get(fields.source)}:${fields.cents}`;
  });
  expect(got.sort()).toEqual(expected.sort());
});

test('examples/customer-totals.ts reads a table in 8 ranges across 2 TaskManagers (NULL ids and ids past the bounds too) and upserts exact totals', async ({ cluster, postgres: pg }) => {
  await pg.client.query('CREATE TABLE orders (id bigint, customer text, amount numeric)');
  await pg.client.query('CREATE TABLE customer_totals (customer text PRIMARY KEY, orders integer, total numeric)');
  await pg.client.query("INSERT INTO orders SELECT g, 'c' || (g % 13), (g % 1000) / 10.0 FROM generate_series(-20, 5020) g");
  await pg.client.query("INSERT INTO orders SELECT NULL, 'c0', 1.5 FROM generate_series(1, 3)");
  // A stale row, replaced by the upsert.
  await pg.client.query("INSERT INTO customer_totals VALUES ('c1', 0, 0)");
  const id = await submitJob(cluster.url, { module: await example(cluster.url, 'customer-totals.ts'), params: { postgres: pg.url, maxId: '5000' }, parallelism: 4 });
  await expectFinished(cluster.url, id);
  const totals = await pg.client.query('SELECT customer, orders, total::text FROM customer_totals ORDER BY customer');
  const expected = await pg.client.query('SELECT customer, count(*)::int AS orders, round(sum(amount), 2)::text AS total FROM orders GROUP BY customer ORDER BY customer');
  expect(totals.rows).toEqual(expected.rows);
});

test('a bounded job writes the entries of 4 Redis streams into PostgreSQL across 2 TaskManagers, every entry once', async ({ cluster, redis, postgres: pg }) => {
  const streams = ['a', 'b', 'c', 'd'].map((s) => redis.key(s));
  for (const stream of streams) {
    const pipeline = redis.client.pipeline();
    for (let n = 0; n < 1500; n++) pipeline.xadd(stream, '*', 'n', String(n));
    await pipeline.exec();
  }
  await pg.client.query('CREATE TABLE entries (stream text, id text, n integer, PRIMARY KEY (stream, id))');
  const module = `import { JobBuilder } from 'spillway';
const job = new JobBuilder('redis-to-postgres');
job
  .readRedisStream({ url: ${JSON.stringify(redis.url)}, streams: ${JSON.stringify(streams)}, batchSize: 200 })
  .map((e) => ({ stream: e.stream, id: e.id, n: Number(e.fields.n) }))
  .rebalance()
  .writePostgres({ url: ${JSON.stringify(pg.url)}, table: 'entries', columns: ['stream', 'id', 'n'], batchSize: 250 });
export default job.build();
`;
  const id = await submitJob(cluster.url, { module: await uploadModule(cluster.url, module), parallelism: 4 });
  await expectFinished(cluster.url, id);
  const { rows } = await pg.client.query<{ stream: string; count: string; sum: string }>('SELECT stream, count(*), sum(n) FROM entries GROUP BY stream ORDER BY stream');
  expect(rows).toEqual([...streams].sort().map((stream) => ({ stream, count: '1500', sum: String((1499 * 1500) / 2) })));
});

test('examples/clicks-per-window.ts (unbounded, with checkpoints): each window’s count of a Redis stream is upserted into PostgreSQL once the watermark passes it', async ({ cluster, redis, postgres: pg }) => {
  await pg.client.query('CREATE TABLE page_clicks (page text, window_start timestamptz, window_end timestamptz, clicks integer, PRIMARY KEY (page, window_start))');
  const stream = redis.key('clicks');
  const base = 1_700_000_000_000;
  const params = { redis: redis.url, postgres: pg.url, stream, window: '1000', outOfOrder: '200', idleness: '300' };
  // A short timeout and some tolerance: a trigger that comes before a task runs is lost, and its checkpoint then waits for its timeout.
  const checkpoints = { interval: 500, timeout: 2000, tolerableFailures: 10, directory: fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-clicks-')) };
  onTestFinished(() => fs.rmSync(checkpoints.directory, { recursive: true, force: true }));
  const id = await submitJob(cluster.url, { module: await example(cluster.url, 'clicks-per-window.ts'), params, parallelism: 2, checkpoints });
  try {
    // Clicks in three windows, a little out of order, then one far later that moves the watermark past them.
    const clicks: [string, number][] = [];
    for (let i = 0; i < 300; i++) clicks.push([`/p${i % 3}`, base + ((i * 7) % 3000)]);
    const pipeline = redis.client.pipeline();
    for (const [page, at] of clicks) pipeline.xadd(stream, '*', 'page', page, 'at', String(at));
    pipeline.xadd(stream, '*', 'page', '/late', 'at', String(base + 10_000));
    await pipeline.exec();
    const expected = new Map<string, number>();
    for (const [page, at] of clicks) {
      const key = `${page} ${Math.floor((at - base) / 1000)}`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    let rows: { page: string; window_start: Date; window_end: Date; clicks: number }[] = [];
    // Past the timeout the comparison below says what is missing.
    await eventually(
      'a row of every window',
      async () => (rows = (await pg.client.query("SELECT * FROM page_clicks WHERE page <> '/late' ORDER BY page, window_start")).rows).length === expected.size,
      { everyMs: 100 },
    ).catch(() => undefined);
    const got = new Map(rows.map((r) => [`${r.page} ${(r.window_start.getTime() - base) / 1000}`, r.clicks]));
    expect(got).toEqual(expected);
    for (const row of rows) expect(row.window_end.getTime() - row.window_start.getTime()).toBe(1000);
    // Checkpoints complete with the Redis source's positions and split supply in them.
    await eventually('a completed checkpoint', async () => (await callJson<{ counts: { completed: number } }>('GET', `${cluster.url}/jobs/${id}/checkpoints`)).counts.completed > 0, { everyMs: 100 });
  } finally {
    await callJson('POST', `${cluster.url}/jobs/${id}/cancel`, {}).catch(() => undefined);
    expect((await waitFor(cluster.url, id, 15_000)).state).toBe('CANCELED');
  }
});

test('a Redis the JobManager cannot reach fails the job with SPW_ERR_SOURCE_IO naming Redis and its URL', async ({ cluster }) => {
  const module = `import { JobBuilder } from 'spillway';
const job = new JobBuilder('redis-down');
job.readRedisStream({ url: 'redis://127.0.0.1:1', streams: ['s'], connectTimeout: 1000 }).discard();
export default job.build();
`;
  const id = await submitJob(cluster.url, { module: await uploadModule(cluster.url, module), parallelism: 2, restart: { strategy: 'none' } });
  const status = await waitFor(cluster.url, id);
  expect(status.state).toBe('FAILED');
  expect(status.error).toContain('the Redis stream source cannot connect to Redis at redis://127.0.0.1:1');
  expect((status as { errorCode?: string }).errorCode).toBe('SPW_ERR_SOURCE_IO');
});

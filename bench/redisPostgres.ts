/**
 * Redis stream -> PostgreSQL: records per second of a bounded job on 2 TaskManagers x 2
 * slots at parallelism 4 (4 streams, a stream a source task, each task's rows inserted in
 * one transaction), beside what the clients do alone on the same records: one ioredis
 * XREAD loop over the streams (the source's ceiling) and one pg COPY FROM STDIN of the
 * rows (the sink's). Its streams and its schema are removed afterwards, however it ends.
 */
import crypto from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { Redis } from 'ioredis';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { PARALLELISM, withCluster } from './cluster.js';

const REDIS_URL = process.env.SPILLWAY_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const POSTGRES_URL = process.env.SPILLWAY_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const STREAMS = 4;
/** Entries per XREAD, in the job and in the plain loop alike. */
const READ_BATCH = 1000;
/** About 100 bytes a record, as the suite's synthetic workload. */
const PAYLOAD = 'x'.repeat(64);

export interface RedisPostgresFigures {
  records: number;
  job: { seconds: number; recordsPerSecond: number };
  xread: { seconds: number; recordsPerSecond: number };
  copy: { seconds: number; recordsPerSecond: number };
  /** The job's rate over the slower of the two plain clients'. */
  ratio: number;
}

const figure = (records: number, ms: number): { seconds: number; recordsPerSecond: number } => ({ seconds: ms / 1000, recordsPerSecond: records / (ms / 1000) });

/** Adds `count` entries `{ n, payload }` to each stream, pipelined in chunks. */
async function fill(redis: Redis, streams: readonly string[], count: number): Promise<void> {
  for (const stream of streams) {
    for (let from = 0; from < count; from += 10_000) {
      const batch = redis.pipeline();
      for (let n = from; n < Math.min(count, from + 10_000); n++) batch.xadd(stream, '*', 'n', String(n), 'payload', PAYLOAD);
      await batch.exec();
    }
  }
}

/** One XREAD loop over every stream, each entry made a record as the source makes it: the client's own rate. */
async function plainXread(redis: Redis, streams: readonly string[]): Promise<number> {
  const after = streams.map(() => '0');
  let records = 0;
  for (;;) {
    const reply = (await redis.xread('COUNT', READ_BATCH, 'STREAMS', ...streams, ...after)) as [string, [string, string[]][]][] | null;
    if (reply === null) return records;
    for (const [stream, entries] of reply) {
      for (const [id, flat] of entries) {
        const fields: Record<string, string> = {};
        for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]] = flat[i + 1];
        if (fields.n === undefined || id === '') throw new Error('an entry without its fields');
        records++;
      }
      after[streams.indexOf(stream)] = entries[entries.length - 1][0];
    }
  }
}

/** COPY FROM STDIN of the same rows (text format) into a table of the same shape. */
async function plainCopy(client: pg.Client, table: string, streams: readonly string[], count: number): Promise<void> {
  function* lines(): Generator<string> {
    for (const stream of streams) {
      let chunk = '';
      for (let n = 0; n < count; n++) {
        chunk += `${stream}\t${n}-0\t${n}\t${PAYLOAD}\n`;
        if (chunk.length > 1 << 16) {
          yield chunk;
          chunk = '';
        }
      }
      if (chunk !== '') yield chunk;
    }
  }
  await pipeline(Readable.from(lines()), client.query(copyFrom(`COPY ${table} (stream, id, n, payload) FROM STDIN`)));
}

/** The job, as a module: 4 streams read by 4 tasks, each entry a row, inserted in batches by the same tasks. */
function jobModule(redisUrl: string, streams: readonly string[], postgresUrl: string): string {
  return `import { JobBuilder } from 'spillway';
const job = new JobBuilder('bench-redis-postgres');
job
  .readRedisStream({ url: ${JSON.stringify(redisUrl)}, streams: ${JSON.stringify(streams)}, batchSize: ${READ_BATCH} })
  .map((e) => ({ stream: e.stream, id: e.id, n: Number(e.fields.n), payload: e.fields.payload }))
  .writePostgres({ url: ${JSON.stringify(postgresUrl)}, table: 'events', columns: ['stream', 'id', 'n', 'payload'] });
export default job.build();
`;
}

async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}

/**
 * Records per second of Redis -> PostgreSQL through the engine, beside the plain
 * clients (quick: 200 K records, else 1 M), each after an untimed warm-up.
 */
export async function measureRedisToPostgres(quick: boolean): Promise<RedisPostgresFigures> {
  const records = quick ? 200_000 : 1_000_000;
  const perStream = records / STREAMS;
  const prefix = `spillway-bench:${crypto.randomBytes(4).toString('hex')}:`;
  const schema = `spillway_bench_${crypto.randomBytes(4).toString('hex')}`;
  const postgresUrl = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const streams = Array.from({ length: STREAMS }, (_, i) => `${prefix}events-${i}`);
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 5000, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined);
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  try {
    await redis.connect();
    await client.connect();
    await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query('CREATE TABLE events (stream text, id text, n integer, payload text)');
    await client.query('CREATE TABLE copied (LIKE events)');
    console.error(`bench: redis-pg: ${records} entries into ${STREAMS} streams`);
    await fill(redis, streams, perStream);

    await plainXread(redis, streams);
    let started = performance.now();
    const read = await plainXread(redis, streams);
    const xread = figure(read, performance.now() - started);
    if (read !== records) throw new Error(`the XREAD loop read ${read} of ${records} entries`);

    await plainCopy(client, 'copied', streams, perStream / 10);
    await client.query('TRUNCATE copied');
    started = performance.now();
    await plainCopy(client, 'copied', streams, perStream);
    const copy = figure(records, performance.now() - started);

    const job = await withCluster({}, async (cluster) => {
      const module = await cluster.upload(jobModule(REDIS_URL, streams, postgresUrl));
      await cluster.run({ module, params: {}, parallelism: PARALLELISM });
      await client.query('TRUNCATE events');
      const status = await cluster.run({ module, params: {}, parallelism: PARALLELISM });
      return figure(records, status.durationMs);
    });
    const { rows } = await client.query<{ count: string }>('SELECT count(*) FROM events');
    if (Number(rows[0].count) !== records) throw new Error(`the job wrote ${rows[0].count} of ${records} rows`);
    const figures: RedisPostgresFigures = { records, job, xread, copy, ratio: job.recordsPerSecond / Math.min(xread.recordsPerSecond, copy.recordsPerSecond) };
    printFigures(figures);
    return figures;
  } finally {
    await deleteKeys(redis, `${prefix}*`).catch(() => undefined);
    redis.disconnect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

function printFigures(f: RedisPostgresFigures): void {
  console.log(`\nRedis stream -> PostgreSQL, ${fmt(f.records)} records of about 100 B in ${STREAMS} streams`);
  console.log('what                                                       wall s   records/s');
  const row = (what: string, x: { seconds: number; recordsPerSecond: number }): void => console.log(`${what.padEnd(58)} ${x.seconds.toFixed(2).padStart(6)}  ${fmt(x.recordsPerSecond).padStart(10)}`);
  row(`job: readRedisStream -> writePostgres, 2 TMs, parallelism ${PARALLELISM}`, f.job);
  row('plain ioredis XREAD loop, one client', f.xread);
  row('plain pg COPY FROM STDIN, one client', f.copy);
  console.log(`job / slower plain client: ${f.ratio.toFixed(2)}`);
}

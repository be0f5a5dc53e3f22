/**
 * The Redis Streams source and sink against a real Redis (test/helpers/services.ts): jobs
 * run in this process (runLocalJob), readers and writers driven directly for positions,
 * restores and the exactly-once hooks. Each test works under a key prefix of its own,
 * removed after it.
 */
import net from 'node:net';
import { describe, expect } from 'vitest';
import type { Redis } from 'ioredis';
import { commitKey, REDIS_STREAM_SINK, type RedisStreamTransaction } from '../../src/connectors/redis/RedisStreamSink.js';
import { REDIS_STREAM_SOURCE, redisStreamSupply, type RedisStreamSplit } from '../../src/connectors/redis/RedisStreamSource.js';
import type { RedisStreamEntry } from '../../src/connectors/redis/RedisOptions.js';
import { FINAL_CHECKPOINT } from '../../src/connectors/ServiceConnection.js';
import type { HeldSplits } from '../../src/connectors/SourceSpec.js';
import type { SinkOf, SourceOf } from '../../src/job/JobDefinition.js';
import { JobBuilder } from '../../src/job/api/JobBuilder.js';
import { drivenSource, openRestored, SimulatedCrash, sinkContext } from '../helpers/connectorContexts.js';
import { runLocalJob } from '../helpers/localJob.js';
import { checkService, serviceTest as test, type RedisScope } from '../helpers/services.js';
import { eventually } from '../helpers/eventually.js';

/** Adds `count` entries `{ n, stream }` to `stream` in one pipeline; their ids. */
async function addEntries(redis: Redis, stream: string, count: number, from = 0): Promise<string[]> {
  const pipeline = redis.pipeline();
  for (let n = from; n < from + count; n++) pipeline.xadd(stream, '*', 'n', String(n), 'stream', stream);
  return ((await pipeline.exec()) ?? []).map(([, id]) => id as string);
}

/** A stream's entries as the source gives them. */
async function entriesOf(redis: Redis, stream: string): Promise<RedisStreamEntry[]> {
  const entries = await redis.xrange(stream, '-', '+');
  return entries.map(([id, flat]) => ({ stream, id, fields: Object.fromEntries(flat.flatMap((_, i) => (i % 2 === 0 ? [[flat[i], flat[i + 1]]] : []))) }));
}

const byStreamAndId = (a: RedisStreamEntry, b: RedisStreamEntry): number => (a.stream === b.stream ? compareId(a.id, b.id) : a.stream < b.stream ? -1 : 1);
function compareId(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt);
  const [bm, bs] = b.split('-').map(BigInt);
  return am !== bm ? (am < bm ? -1 : 1) : as === bs ? 0 : as < bs ? -1 : 1;
}

function source(redis: RedisScope, streams: string[], more: Partial<SourceOf<'redisStream'>> = {}): SourceOf<'redisStream'> {
  return { kind: 'redisStream', url: redis.url, streams, ...more };
}

function sink(redis: RedisScope, stream: string, more: Partial<SinkOf<'redisStream'>> = {}): SinkOf<'redisStream'> {
  return { kind: 'redisStream', url: redis.url, stream, ...more };
}

/** A port on loopback that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A server on loopback that takes connections and never answers; closed by the returned function. */
async function silentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => void sockets.add(socket)).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('Redis stream source', () => {
  test('a bounded job reads every entry of its streams once, each stream by one task, with its fields', async ({ redis }) => {
    const streams = ['a', 'b', 'c'].map((s) => redis.key(s));
    for (const [i, stream] of streams.entries()) await addEntries(redis.client, stream, 1200 + i * 100);
    const job = new JobBuilder('redis-read');
    job.readRedisStream({ url: redis.url, streams, batchSize: 250 }).collect();
    const run = await runLocalJob(job.build(), { parallelism: 2 });
    const bySubtask = run.collected.get('redisStream')! as RedisStreamEntry[][];
    const expected = (await Promise.all(streams.map((s) => entriesOf(redis.client, s)))).flat();
    expect(bySubtask.flat().sort(byStreamAndId)).toEqual(expected.sort(byStreamAndId));
    // A stream is a split: all of it went to one task, in order.
    for (const stream of streams) {
      const readers = bySubtask.filter((records) => records.some((r) => r.stream === stream));
      expect(readers).toHaveLength(1);
      const ids = readers[0].filter((r) => r.stream === stream).map((r) => r.id);
      expect(ids).toEqual([...ids].sort(compareId));
    }
  });

  test('bounded reading stops at the last ids fixed at the first split assignment while entries keep arriving', async ({ redis }) => {
    const stream = redis.key('busy');
    await addEntries(redis.client, stream, 500);
    // The JobManager's supply fixes each stream's end once; entries added afterwards are not read.
    const supply = await redisStreamSupply(source(redis, [stream]));
    const [split] = supply.take() as RedisStreamSplit[];
    const lastAtStart = (await redis.client.xrevrange(stream, '+', '-', 'COUNT', 1))[0][0];
    expect(split).toEqual({ stream, after: '0', until: lastAtStart });
    await addEntries(redis.client, stream, 300, 500);
    const driven = drivenSource({ first: [split] });
    await REDIS_STREAM_SOURCE.read(source(redis, [stream], { batchSize: 64 }), driven.context);
    expect((driven.records as RedisStreamEntry[]).map((r) => r.fields.n)).toEqual(Array.from({ length: 500 }, (_, n) => String(n)));

    // A whole job, while a writer keeps adding: it ends, with a prefix of the stream that holds all that was there when it started.
    let writing = true;
    const writer = (async () => {
      for (let n = 800; writing; n += 20) await addEntries(redis.client, stream, 20, n);
    })();
    const before = (await redis.client.xrevrange(stream, '+', '-', 'COUNT', 1))[0][0];
    const job = new JobBuilder('redis-bounded');
    job.readRedisStream({ url: redis.url, streams: [stream], batchSize: 100 }).collect();
    const run = await runLocalJob(job.build(), { parallelism: 2 });
    writing = false;
    await writer;
    const read = (run.collected.get('redisStream')!.flat() as RedisStreamEntry[]).sort(byStreamAndId);
    const all = await entriesOf(redis.client, stream);
    expect(read).toEqual(all.slice(0, read.length));
    expect(compareId(read[read.length - 1].id, before)).toBeGreaterThanOrEqual(0);
    expect(all.length).toBeGreaterThan(read.length);
  });

  test('from an id reads the entries after it; from $ only those added after the job starts; an empty or absent stream is no split', async ({ redis }) => {
    const [a, b, empty] = ['a', 'b', 'empty'].map((s) => redis.key(s));
    const idsA = await addEntries(redis.client, a, 10);
    await addEntries(redis.client, b, 10);
    const supply = await redisStreamSupply(source(redis, [a, b, empty], { from: { [a]: idsA[6] } }));
    const splits = [...supply.take(), ...supply.take(), ...supply.take()] as RedisStreamSplit[];
    expect(splits.map((s) => s.stream)).toEqual([a, b]);
    const driven = drivenSource({ splits: supply, first: splits });
    await REDIS_STREAM_SOURCE.read(source(redis, [a, b, empty]), driven.context);
    expect((driven.records as RedisStreamEntry[]).map((r) => `${r.stream.slice(-1)}${r.fields.n}`)).toEqual(['a7', 'a8', 'a9', ...Array.from({ length: 10 }, (_, n) => `b${n}`)]);

    const unbounded = await redisStreamSupply(source(redis, [a, empty], { from: '$', bounded: false }));
    expect(unbounded.take()).toEqual([{ stream: a, after: idsA[9] }]);
    expect(unbounded.take()).toEqual([{ stream: empty, after: '0-0' }]);
  });

  test("a reader restored from a marked position reads on after each stream's last id read: every entry once", async ({ redis }) => {
    const streams = ['x', 'y'].map((s) => redis.key(s));
    for (const stream of streams) await addEntries(redis.client, stream, 700);
    const spec = source(redis, streams, { batchSize: 100 });
    const supply = await redisStreamSupply(spec);
    const crashed = drivenSource({ splits: supply, crashAt: 1030 });
    await expect(REDIS_STREAM_SOURCE.read(spec, crashed.context)).rejects.toBeInstanceOf(SimulatedCrash);
    // The checkpoint: the last position marked before the crash, and the records pushed by then.
    const { position, pushed } = crashed.marks[crashed.marks.length - 1];
    const held = position as HeldSplits;
    expect(held.splits[0]).toMatchObject({ stream: streams[1] });
    // Three answers by then: one stream each, and the empty one asked for while the second was read.
    expect(held.received).toBe(3);
    // A restore hands the held splits out again, then what the supply still has (nothing).
    const restored = drivenSource({ splits: supply, first: held.splits });
    await REDIS_STREAM_SOURCE.read(spec, restored.context);
    const all = [...crashed.records.slice(0, pushed), ...restored.records] as RedisStreamEntry[];
    const expected = (await Promise.all(streams.map((s) => entriesOf(redis.client, s)))).flat();
    expect(all.sort(byStreamAndId)).toEqual(expected.sort(byStreamAndId));
    expect(REDIS_STREAM_SOURCE.resume!({ stream: 's', after: '0', until: '9-0' }, '5-1')).toEqual({ stream: 's', after: '5-1', until: '9-0' });
  });

  test('an unbounded job reads what arrives until it is canceled, and its sink without checkpoints writes as records come', async ({ redis }) => {
    const [a, b, out] = ['a', 'b', 'out'].map((s) => redis.key(s));
    await addEntries(redis.client, a, 50);
    const job = new JobBuilder('redis-unbounded');
    job
      .readRedisStream({ url: redis.url, streams: [a, b], bounded: false, blockMs: 50 })
      .map((entry) => ({ from: entry.stream, n: entry.fields.n }))
      .writeRedisStream({ url: redis.url, stream: out });
    let arrived = 0;
    const until = (async () => {
      // Entries that arrive while the job runs (it has written the first ones), on both streams.
      await eventually('the first 50 entries written', async () => (await redis.client.xlen(out)) >= 50);
      await addEntries(redis.client, a, 50, 50);
      await addEntries(redis.client, b, 100);
      await eventually(() => `200 entries written (${arrived})`, async () => (arrived = await redis.client.xlen(out)) >= 200, { everyMs: 20 });
    })();
    // It ends: the cancel got through a blocked read.
    await runLocalJob(job.build(), { parallelism: 2, until });
    const written = await entriesOf(redis.client, out);
    for (const stream of [a, b]) {
      const ns = written.filter((e) => e.fields.from === stream).map((e) => Number(e.fields.n));
      expect(ns).toEqual(Array.from({ length: 100 }, (_, n) => n));
    }
  });

  test('a Redis that refuses or never answers fails the source at once with SPW_ERR_SOURCE_IO naming Redis and its URL', async () => {
    const port = await closedPort();
    const url = `redis://:secret@127.0.0.1:${port}`;
    const refused = await redisStreamSupply({ kind: 'redisStream', url, streams: ['s'] }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'SPW_ERR_SOURCE_IO' });
    expect((refused as Error).message).toContain(`Redis at redis://:***@127.0.0.1:${port}`);
    expect((refused as Error).message).toContain('ECONNREFUSED');
    expect((refused as Error).message).not.toContain('secret');
    const silent = await silentServer();
    try {
      const read = REDIS_STREAM_SOURCE.read({ kind: 'redisStream', url: `redis://127.0.0.1:${silent.port}`, streams: ['s'], connectTimeout: 300 }, drivenSource().context);
      await expect(read).rejects.toMatchObject({ code: 'SPW_ERR_SOURCE_IO', message: expect.stringContaining('did not answer within 300 ms') });
    } finally {
      await silent.close();
    }
    // A job fails with the code, not a hang.
    const job = new JobBuilder('redis-down');
    job.readRedisStream({ url: `redis://127.0.0.1:${port}`, streams: ['s'], bounded: false }).discard();
    await expect(runLocalJob(job.build(), { parallelism: 1 })).rejects.toMatchObject({ code: 'SPW_ERR_SOURCE_IO' });
  });
});

describe('Redis stream sink', () => {
  test('without checkpoints, records are added in pipelined batches as they come, each field as a string (bytes as bytes)', async ({ redis }) => {
    const stream = redis.key('out');
    const writer = await REDIS_STREAM_SINK.open(sink(redis, stream, { batchSize: 500 }), sinkContext());
    for (let n = 0; n < 1200; n++) await writer.push({ n, even: n % 2 === 0, tags: ['x', n], at: new Date(n), raw: Buffer.from([n % 256]), none: undefined });
    expect(await redis.client.xlen(stream)).toBe(1000);
    await writer.end();
    const [first] = await redis.client.xrangeBuffer(stream, '-', '+', 'COUNT', 1);
    const fields = first[1].map((b) => b.toString('latin1'));
    expect(fields).toEqual(['n', '0', 'even', 'true', 'tags', '["x",0]', 'at', new Date(0).toISOString(), 'raw', '\u0000']);
    expect(await redis.client.xlen(stream)).toBe(1200);
  });

  test('with checkpoints, a checkpoint’s entries appear when it commits, in one MULTI/EXEC with the commit key', async ({ redis }) => {
    const stream = redis.key('out');
    const spec = sink(redis, stream);
    const writer = await REDIS_STREAM_SINK.open(spec, sinkContext({ checkpointed: true, jobId: 'job-a', subtask: 1 }));
    for (let n = 0; n < 10; n++) await writer.push({ n });
    const first = (await writer.prepareCommit!(1)) as RedisStreamTransaction;
    for (let n = 10; n < 15; n++) await writer.push({ n });
    expect(await redis.client.xlen(stream)).toBe(0);
    await writer.commit!(1, first);
    expect(await redis.client.xlen(stream)).toBe(10);
    expect(await redis.client.get(commitKey(spec, 'job-a', 1))).toBe('1');
    const second = await writer.prepareCommit!(2);
    await writer.commit!(2, second);
    // A checkpoint with nothing new writes its id alone.
    await writer.commit!(3, await writer.prepareCommit!(3));
    expect((await entriesOf(redis.client, stream)).map((e) => Number(e.fields.n))).toEqual(Array.from({ length: 15 }, (_, n) => n));
    expect(await redis.client.get(commitKey(spec, 'job-a', 1))).toBe('3');
    await writer.end();
  });

  test('a commit retried after a simulated crash is a no-op; pending transactions given to a fresh writer are committed once, oldest first, before anything new', async ({ redis }) => {
    const stream = redis.key('out');
    const spec = sink(redis, stream, { name: redis.key('events-sink') });
    const crashed = await REDIS_STREAM_SINK.open(spec, sinkContext({ checkpointed: true, jobId: 'job-b' }));
    for (let n = 0; n < 5; n++) await crashed.push({ n });
    const tx1 = await crashed.prepareCommit!(1);
    await crashed.commit!(1, tx1);
    for (let n = 5; n < 8; n++) await crashed.push({ n });
    const tx2 = await crashed.prepareCommit!(2);
    for (let n = 8; n < 10; n++) await crashed.push({ n });
    const tx3 = await crashed.prepareCommit!(3);
    // The crash: checkpoints 2 and 3 completed, their commits never ran.
    crashed.abort();
    // The restored attempt (same job, a new attempt) is handed checkpoints 1 (committed already), 2 and 3.
    const pending: [number, unknown][] = [
      [1, tx1],
      [2, tx2],
      [3, tx3],
    ];
    const restored = await openRestored(REDIS_STREAM_SINK, spec, sinkContext({ checkpointed: true, jobId: 'job-b', attempt: 1, pending }));
    expect((await entriesOf(redis.client, stream)).map((e) => Number(e.fields.n))).toEqual(Array.from({ length: 10 }, (_, n) => n));
    // And again, as if the restored one crashed before its first checkpoint: nothing twice.
    const again = await openRestored(REDIS_STREAM_SINK, spec, sinkContext({ checkpointed: true, jobId: 'job-b', attempt: 2, pending }));
    await again.commit!(3, tx3);
    again.abort();
    expect(await redis.client.xlen(stream)).toBe(10);
    await restored.push({ n: 10 });
    await restored.commit!(4, await restored.prepareCommit!(4));
    expect((await entriesOf(redis.client, stream)).map((e) => Number(e.fields.n))).toEqual(Array.from({ length: 11 }, (_, n) => n));
    // Another job's subtask 0 has a key of its own: its checkpoint 1 is written.
    const other = await REDIS_STREAM_SINK.open(spec, sinkContext({ checkpointed: true, jobId: 'job-c' }));
    await other.push({ n: 11 });
    await other.commit!(1, await other.prepareCommit!(1));
    expect(await redis.client.xlen(stream)).toBe(12);
    await Promise.all([restored.end(), other.end()]);
  });

  test('two attempts committing the same checkpoint at once write it once (WATCH)', async ({ redis }) => {
    const stream = redis.key('out');
    const spec = sink(redis, stream);
    const writers = await Promise.all([0, 1].map((attempt) => REDIS_STREAM_SINK.open(spec, sinkContext({ checkpointed: true, attempt }))));
    const transaction: RedisStreamTransaction = { job: 'job-test', entries: Array.from({ length: 2000 }, (_, n) => ['n', String(n)]) };
    for (let round = 1; round <= 5; round++) await Promise.all(writers.map((writer) => writer.commit!(round, transaction)));
    expect(await redis.client.xlen(stream)).toBe(10_000);
    for (const writer of writers) writer.abort();
  });

  test('at the end of its input a checkpointed writer commits what is prepared and the rest; later commits of its job are no-ops', async ({ redis }) => {
    const stream = redis.key('out');
    const spec = sink(redis, stream);
    const writer = await REDIS_STREAM_SINK.open(spec, sinkContext({ checkpointed: true }));
    await writer.push({ n: 0 });
    const tx1 = await writer.prepareCommit!(1);
    await writer.push({ n: 1 });
    await writer.end();
    expect(await redis.client.xlen(stream)).toBe(2);
    expect(await redis.client.get(commitKey(spec, 'job-test', 0))).toBe(String(FINAL_CHECKPOINT));
    const late = await openRestored(REDIS_STREAM_SINK, spec, sinkContext({ checkpointed: true, pending: [[1, tx1]] }));
    late.abort();
    expect(await redis.client.xlen(stream)).toBe(2);
    // Nothing after the last checkpoint (a stop at a savepoint): the key keeps the checkpoint's id, and its commit after the end is a no-op.
    const stopped = await REDIS_STREAM_SINK.open(spec, sinkContext({ checkpointed: true, jobId: 'job-stopped' }));
    await stopped.push({ n: 2 });
    const savepoint = await stopped.prepareCommit!(7);
    await stopped.end();
    await stopped.commit!(7, savepoint);
    expect(await redis.client.get(commitKey(spec, 'job-stopped', 0))).toBe('7');
    expect(await redis.client.xlen(stream)).toBe(3);
    // Without checkpoints a writer has no two-phase hooks: the engine takes no transaction from it.
    const through = await REDIS_STREAM_SINK.open(spec, sinkContext());
    expect(through.prepareCommit).toBeUndefined();
    through.abort();
  });

  test('a record that is not an object of fields is SPW_ERR_SINK_RECORD; a key of another type, or a Redis that refuses, SPW_ERR_SINK_IO', async ({ redis }) => {
    const stream = redis.key('out');
    const writer = await REDIS_STREAM_SINK.open(sink(redis, stream), sinkContext({ checkpointed: true }));
    for (const record of ['text', [1, 2], {}, null]) expect(() => writer.push(record)).toThrow(expect.objectContaining({ code: 'SPW_ERR_SINK_RECORD' }));
    await redis.client.set(stream, 'not a stream');
    await writer.push({ n: 1 });
    await expect(writer.commit!(1, await writer.prepareCommit!(1))).rejects.toMatchObject({ code: 'SPW_ERR_SINK_IO', message: expect.stringContaining('holds a string') });
    expect(await redis.client.get(commitKey(sink(redis, stream), 'job-test', 0))).toBeNull();
    writer.abort();
    const port = await closedPort();
    await expect(REDIS_STREAM_SINK.open(sink(redis, stream, { url: `redis://127.0.0.1:${port}` }), sinkContext())).rejects.toMatchObject({
      code: 'SPW_ERR_SINK_IO',
      message: expect.stringContaining(`the Redis stream sink cannot connect to Redis at redis://127.0.0.1:${port}`),
    });
  });
});

test('a service that is down fails its tests naming it, its URL and the command that starts it', async () => {
  const port = await closedPort();
  await expect(checkService('Redis', `redis://127.0.0.1:${port}`)).rejects.toThrow(new RegExp(`Redis does not answer at redis://127.0.0.1:${port} .*ECONNREFUSED[\\s\\S]*redis-server --daemonize yes`));
  await expect(checkService('PostgreSQL', `postgres://postgres@127.0.0.1:${port}/test`)).rejects.toThrow(/PostgreSQL does not answer at .*pg_ctlcluster --skip-systemctl-redirect/s);
});

/**
 * The PostgreSQL source and sink against a real PostgreSQL (test/helpers/services.ts):
 * split ranges against the rows they select, jobs run in this process (runLocalJob),
 * readers and writers driven directly for positions, restores and the exactly-once hooks.
 * Each test works in a schema of its own, dropped after it.
 */
import net from 'node:net';
import { describe, expect } from 'vitest';
import { POSTGRES_SINK, type PostgresTransaction } from '../../src/connectors/postgres/PostgresSink.js';
import { POSTGRES_SOURCE } from '../../src/connectors/postgres/PostgresSource.js';
import { rangeSplits, splitQuery } from '../../src/connectors/postgres/PostgresSplits.js';
import { FINAL_CHECKPOINT } from '../../src/connectors/ServiceConnection.js';
import type { HeldSplits } from '../../src/connectors/SourceSpec.js';
import { ListSupply } from '../../src/connectors/ListSupply.js';
import { JobBuilder } from '../../src/job/api/JobBuilder.js';
import type { SinkOf, SourceOf } from '../../src/job/JobDefinition.js';
import { drivenSource, openRestored, SimulatedCrash, sinkContext } from '../helpers/connectorContexts.js';
import { runLocalJob } from '../helpers/localJob.js';
import { serviceTest as test, type PostgresScope } from '../helpers/services.js';
import { eventually } from '../helpers/eventually.js';

type Source = SourceOf<'postgres'>;

/** A table `items(id int, grp int, label text)`: ids `from`..`to` (each once, in a shuffled order) and `nulls` rows with a NULL id. */
async function makeItems(pg: PostgresScope, from: number, to: number, nulls: number): Promise<void> {
  await pg.client.query('CREATE TABLE items (id integer, grp integer, label text)');
  await pg.client.query(`INSERT INTO items SELECT g, g % 7, 'item ' || g FROM generate_series($1::int, $2::int) g ORDER BY md5(g::text)`, [from, to]);
  await pg.client.query(`INSERT INTO items SELECT NULL, n, 'no id ' || n FROM generate_series(1, $1::int) n`, [nulls]);
}

async function labels(pg: PostgresScope, sql = 'SELECT label FROM items'): Promise<string[]> {
  return (await pg.client.query<{ label: string }>(sql)).rows.map((r) => r.label).sort();
}

function pgSource(pg: PostgresScope, more: Partial<Source> = {}): Source {
  return { kind: 'postgres', url: pg.url, query: 'SELECT * FROM items', ...more };
}

function pgSink(pg: PostgresScope, more: Partial<SinkOf<'postgres'>> = {}): SinkOf<'postgres'> {
  return { kind: 'postgres', url: pg.url, table: 'totals', columns: ['k', 'n'], ...more };
}

async function closedPort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('PostgreSQL source', () => {
  test('split ranges cover every row exactly once: NULLs and values below the lower bound in the first, above the upper in the last', async ({ postgres: pg }) => {
    await makeItems(pg, -30, 130, 5);
    const all = await labels(pg);
    const cases: Partial<Source>[] = [
      { partitionColumn: 'id', lowerBound: 0, upperBound: 100, partitions: 4 },
      { partitionColumn: 'id', lowerBound: 0, upperBound: 100, partitions: 7 },
      { partitionColumn: 'id', lowerBound: 10, upperBound: 13, partitions: 10 },
      { partitionColumn: 'id', lowerBound: 50, upperBound: 50, partitions: 3 },
      { partitionColumn: 'id', lowerBound: 200, upperBound: 300, partitions: 3 },
      { partitionColumn: 'id', lowerBound: -0.5, upperBound: 99.5, partitions: 6 },
      { partitionColumn: 'grp', lowerBound: 0, upperBound: 6, partitions: 3, query: 'SELECT label, grp FROM items;' },
      {},
    ];
    for (const more of cases) {
      const source = pgSource(pg, more);
      const splits = rangeSplits(source, 3);
      const read: string[] = [];
      for (const split of splits) {
        const { text, values } = splitQuery(source, split);
        read.push(...(await pg.client.query<{ label: string }>(text, values)).rows.map((r) => r.label));
      }
      expect(read.sort(), JSON.stringify(more)).toEqual(all);
    }
    expect(rangeSplits(pgSource(pg, cases[0]), 3)).toEqual([
      { index: 0, to: 25, nulls: true },
      { index: 1, from: 25, to: 50 },
      { index: 2, from: 50, to: 75 },
      { index: 3, from: 75 },
    ]);
    expect(rangeSplits(pgSource(pg, cases[2]), 3)).toHaveLength(3);
  });

  test('a job reads the ranges across its tasks, every row once, as objects keyed by column with node-postgres types', async ({ postgres: pg }) => {
    await makeItems(pg, 1, 3000, 3);
    const job = new JobBuilder('pg-read');
    job.readPostgres<{ id: number | null; grp: number; label: string }>({ url: pg.url, query: 'SELECT * FROM items', partitionColumn: 'id', lowerBound: 1, upperBound: 3000, partitions: 5, fetchSize: 200 }).collect();
    const run = await runLocalJob(job.build(), { parallelism: 3 });
    const rows = run.collected.get('postgres')!.flat() as { id: number | null; grp: number; label: string }[];
    expect(rows.map((r) => r.label).sort()).toEqual(await labels(pg));
    expect(rows.find((r) => r.id === 7)).toEqual({ id: 7, grp: 0, label: 'item 7' });
    expect(run.collected.get('postgres')!.filter((records) => records.length > 0).length).toBeGreaterThan(1);

    await pg.client.query("CREATE TABLE typed AS SELECT 9007199254740993::int8 AS big, 1.50::numeric AS num, '2024-05-01T10:00:00Z'::timestamptz AS at, '{\"a\": [1]}'::jsonb AS doc, '\\x0102'::bytea AS raw, true AS ok");
    const driven = drivenSource({ splits: new ListSupply(rangeSplits(pgSource(pg), 1)) });
    await POSTGRES_SOURCE.read(pgSource(pg, { query: 'SELECT * FROM typed' }), driven.context);
    expect(driven.records).toEqual([{ big: '9007199254740993', num: '1.50', at: new Date('2024-05-01T10:00:00Z'), doc: { a: [1] }, raw: Buffer.from([1, 2]), ok: true }]);
  });

  test('with orderBy a split resumes after the rows it read (OFFSET): a restore from a marked position reads every row once', async ({ postgres: pg }) => {
    await makeItems(pg, 1, 1000, 4);
    const source = pgSource(pg, { partitionColumn: 'id', lowerBound: 1, upperBound: 1000, partitions: 2, orderBy: 'label', fetchSize: 64 });
    const supply = new ListSupply(rangeSplits(source, 2));
    const crashed = drivenSource({ splits: supply, crashAt: 700 });
    await expect(POSTGRES_SOURCE.read(source, crashed.context)).rejects.toBeInstanceOf(SimulatedCrash);
    const { position, pushed } = crashed.marks[crashed.marks.length - 1];
    const held = position as HeldSplits;
    // The first range held ids below 500 and the 4 NULLs: 503 rows.
    expect(held.splits[0]).toMatchObject({ index: 1, skip: pushed - 503 });
    const restored = drivenSource({ splits: supply, first: held.splits });
    await POSTGRES_SOURCE.read(source, restored.context);
    const all = [...crashed.records.slice(0, pushed), ...restored.records] as { label: string }[];
    expect(all.map((r) => r.label).sort()).toEqual(await labels(pg));
  });

  test('without orderBy a split is a unit: positions are marked only at its start, and a restore reads it again whole', async ({ postgres: pg }) => {
    await makeItems(pg, 1, 600, 0);
    const source = pgSource(pg, { partitionColumn: 'id', lowerBound: 1, upperBound: 600, partitions: 3, fetchSize: 50 });
    const supply = new ListSupply(rangeSplits(source, 3));
    const crashed = drivenSource({ splits: supply, crashAt: 450 });
    await expect(POSTGRES_SOURCE.read(source, crashed.context)).rejects.toBeInstanceOf(SimulatedCrash);
    // Marks between splits hold none; within a split, only its start is marked.
    const within = crashed.marks.filter((m) => (m.position as HeldSplits).splits.length > 0);
    expect(within.map((m) => m.pushed)).toEqual([0, 199, 399]);
    const { position, pushed } = crashed.marks[crashed.marks.length - 1];
    expect((position as HeldSplits).splits).toEqual([{ index: 2, from: 400, skip: 0 }]);
    const restored = drivenSource({ splits: supply, first: (position as HeldSplits).splits });
    await POSTGRES_SOURCE.read(source, restored.context);
    const all = [...crashed.records.slice(0, pushed), ...restored.records] as { label: string }[];
    expect(all.map((r) => r.label).sort()).toEqual(await labels(pg));
  });

  test('a PostgreSQL that refuses, or a query it refuses, fails the source with SPW_ERR_SOURCE_IO naming PostgreSQL, its URL and the error', async ({ postgres: pg }) => {
    const port = await closedPort();
    const url = `postgres://postgres:secret@127.0.0.1:${port}/test`;
    const driven = drivenSource({ splits: new ListSupply([{ index: 0 }]) });
    const refused = await POSTGRES_SOURCE.read({ kind: 'postgres', url, query: 'SELECT 1' }, driven.context).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'SPW_ERR_SOURCE_IO', message: expect.stringContaining(`PostgreSQL at postgres://postgres:***@127.0.0.1:${port}/test`) });
    expect((refused as Error).message).toContain('ECONNREFUSED');
    const bad = drivenSource({ splits: new ListSupply([{ index: 0 }]) });
    await expect(POSTGRES_SOURCE.read(pgSource(pg, { query: 'SELECT * FROM missing_table' }), bad.context)).rejects.toMatchObject({
      code: 'SPW_ERR_SOURCE_IO',
      message: expect.stringMatching(/relation "missing_table" does not exist \(SQLSTATE 42P01\)/),
    });
  });
});

describe('PostgreSQL sink', () => {
  test('a bounded job without checkpoints writes each task’s rows in batches, in one transaction committed at the end of its input', async ({ postgres: pg }) => {
    await pg.client.query('CREATE TABLE totals (k text, n integer)');
    const job = new JobBuilder('pg-write');
    job
      .generate(function* (subtask, parallelism) {
        for (let n = subtask; n < 5000; n += parallelism) yield { k: `key ${n}`, n, ignored: true };
      })
      .writePostgres({ url: pg.url, table: 'totals', columns: ['k', 'n'], batchSize: 300 });
    await runLocalJob(job.build(), { parallelism: 2 });
    const { rows } = await pg.client.query<{ count: string; sum: string }>('SELECT count(*), sum(n) FROM totals');
    expect(rows[0]).toEqual({ count: '5000', sum: String((4999 * 5000) / 2) });

    // Rows flushed in batches stay invisible until the end; an aborted task leaves none.
    const writer = await POSTGRES_SINK.open(pgSink(pg, { batchSize: 100 }), sinkContext());
    for (let n = 0; n < 450; n++) await writer.push({ k: 'aborted', n });
    expect((await pg.client.query("SELECT count(*) FROM totals WHERE k = 'aborted'")).rows[0].count).toBe('0');
    // The writer's transaction holds a lock on the table until its rollback: waited for, then nothing is there.
    const holders = async (): Promise<number> =>
      (await pg.client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON l.relation = c.oid WHERE c.oid = 'totals'::regclass AND l.pid <> pg_backend_pid()")).rows[0].n;
    expect(await holders(), 'the open transaction').toBeGreaterThan(0);
    writer.abort();
    await eventually('the aborted transaction rolled back', async () => (await holders()) === 0);
    expect((await pg.client.query("SELECT count(*) FROM totals WHERE k = 'aborted'")).rows[0].count).toBe('0');
  });

  test('with upsertKey a row whose key is there updates it, the last row of a key in a batch winning; values take their column types', async ({ postgres: pg }) => {
    await pg.client.query('CREATE TABLE totals (k text, region text, n bigint, at timestamptz, raw bytea, doc jsonb, f float8, PRIMARY KEY (k, region))');
    await pg.client.query("INSERT INTO totals (k, region, n) VALUES ('a', 'eu', 1)");
    const columns = ['k', 'region', 'n', 'at', 'raw', 'doc', 'f'];
    const writer = await POSTGRES_SINK.open(pgSink(pg, { columns, upsertKey: ['k', 'region'] }), sinkContext());
    await writer.push({ k: 'a', region: 'eu', n: 2, at: new Date(0), raw: Buffer.from('hi'), doc: { x: [1, 2] }, f: Number.NaN });
    await writer.push({ k: 'a', region: 'eu', n: 3n, at: new Date(1000), f: Infinity });
    await writer.push({ k: 'a', region: 'us', n: 9007199254740993n });
    await writer.end();
    const { rows } = await pg.client.query('SELECT * FROM totals ORDER BY region');
    expect(rows).toEqual([
      { k: 'a', region: 'eu', n: '3', at: new Date(1000), raw: null, doc: null, f: Infinity },
      { k: 'a', region: 'us', n: '9007199254740993', at: null, raw: null, doc: null, f: null },
    ]);
    const typed = await POSTGRES_SINK.open(pgSink(pg, { columns, upsertKey: ['k', 'region'] }), sinkContext());
    await typed.push({ k: 'b', region: 'eu', raw: Buffer.from('hi'), doc: { x: [1, 2] }, f: Number.NaN });
    await typed.end();
    expect((await pg.client.query("SELECT raw, doc, f FROM totals WHERE k = 'b'")).rows).toEqual([{ raw: Buffer.from('hi'), doc: { x: [1, 2] }, f: Number.NaN }]);
  });

  test('with checkpoints a checkpoint’s rows are written when it commits, with the task’s commit row, in a commit table made if absent', async ({ postgres: pg }) => {
    await pg.client.query('CREATE TABLE totals (k text, n integer)');
    const writer = await POSTGRES_SINK.open(pgSink(pg), sinkContext({ checkpointed: true, jobId: 'job-a', subtask: 2 }));
    for (let n = 0; n < 2500; n++) await writer.push({ k: 'x', n });
    const tx1 = await writer.prepareCommit!(1);
    await writer.push({ k: 'y', n: 1 });
    expect((await pg.client.query('SELECT count(*) FROM totals')).rows[0].count).toBe('0');
    await writer.commit!(1, tx1);
    expect((await pg.client.query('SELECT count(*) FROM totals')).rows[0].count).toBe('2500');
    await writer.commit!(2, await writer.prepareCommit!(2));
    // The default commit table, in the connection's schema (search_path).
    const commits = await pg.client.query(`SELECT job_id, sink, subtask, checkpoint_id FROM ${pg.schema}.spillway_sink_commits`);
    expect(commits.rows).toEqual([{ job_id: 'job-a', sink: 'totals', subtask: 2, checkpoint_id: '2' }]);
    await writer.end();
    expect((await pg.client.query('SELECT count(*) FROM totals')).rows[0].count).toBe('2501');
  });

  test('a commit retried after a simulated crash is a no-op; pending transactions given to a fresh writer are committed once, before anything new', async ({ postgres: pg }) => {
    await pg.client.query('CREATE TABLE totals (k text, n integer)');
    const spec = pgSink(pg, { commitTable: `${pg.schema}.commits` });
    const crashed = await POSTGRES_SINK.open(spec, sinkContext({ checkpointed: true, jobId: 'job-b' }));
    for (let n = 0; n < 5; n++) await crashed.push({ k: 'a', n });
    const tx1 = await crashed.prepareCommit!(1);
    await crashed.commit!(1, tx1);
    for (let n = 5; n < 8; n++) await crashed.push({ k: 'a', n });
    const tx2 = await crashed.prepareCommit!(2);
    crashed.abort();
    const pending: [number, unknown][] = [
      [1, tx1],
      [2, tx2],
    ];
    const restored = await openRestored(POSTGRES_SINK, spec, sinkContext({ checkpointed: true, jobId: 'job-b', attempt: 1, pending }));
    const again = await openRestored(POSTGRES_SINK, spec, sinkContext({ checkpointed: true, jobId: 'job-b', attempt: 2, pending }));
    await again.commit!(2, tx2);
    again.abort();
    const ns = async (): Promise<number[]> => (await pg.client.query<{ n: number }>('SELECT n FROM totals ORDER BY n')).rows.map((r) => r.n);
    expect(await ns()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    await restored.push({ k: 'a', n: 8 });
    await restored.end();
    expect(await ns()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect((await pg.client.query(`SELECT checkpoint_id FROM ${pg.schema}.commits`)).rows).toEqual([{ checkpoint_id: String(FINAL_CHECKPOINT) }]);
    await restored.commit!(3, { job: 'job-b', rows: [['late', 99]] });
    expect(await ns()).toHaveLength(9);
    // Without checkpoints a writer has no two-phase hooks (and needs no commit table).
    const through = await POSTGRES_SINK.open(pgSink(pg), sinkContext());
    expect(through.prepareCommit).toBeUndefined();
    through.abort();
  });

  test('two attempts committing the same checkpoint at once write it once (the commit row is locked, then checked)', async ({ postgres: pg }) => {
    await pg.client.query('CREATE TABLE totals (k text, n integer)');
    const writers = await Promise.all([0, 1].map((attempt) => POSTGRES_SINK.open(pgSink(pg), sinkContext({ checkpointed: true, attempt }))));
    const transaction: PostgresTransaction = { job: 'job-test', rows: Array.from({ length: 3000 }, (_, n) => ['t', n]) };
    for (let round = 1; round <= 3; round++) await Promise.all(writers.map((writer) => writer.commit!(round, transaction)));
    expect((await pg.client.query('SELECT count(*) FROM totals')).rows[0].count).toBe('9000');
    for (const writer of writers) writer.abort();
  });

  test('a record that is no object is SPW_ERR_SINK_RECORD; a row the table refuses, or a PostgreSQL that refuses, SPW_ERR_SINK_IO', async ({ postgres: pg }) => {
    await pg.client.query('CREATE TABLE totals (k text PRIMARY KEY, n integer NOT NULL)');
    const writer = await POSTGRES_SINK.open(pgSink(pg), sinkContext({ checkpointed: true }));
    for (const record of ['text', [1, 2], null]) expect(() => writer.push(record)).toThrow(expect.objectContaining({ code: 'SPW_ERR_SINK_RECORD' }));
    await writer.push({ k: 'a' });
    await expect(writer.commit!(1, await writer.prepareCommit!(1))).rejects.toMatchObject({ code: 'SPW_ERR_SINK_IO', message: expect.stringContaining('SQLSTATE 23502') });
    // The failed commit wrote nothing, its id neither.
    expect((await pg.client.query('SELECT count(*) FROM spillway_sink_commits WHERE checkpoint_id > 0')).rows[0].count).toBe('0');
    writer.abort();
    const port = await closedPort();
    await expect(POSTGRES_SINK.open(pgSink(pg, { url: `postgres://postgres@127.0.0.1:${port}/test` }), sinkContext())).rejects.toMatchObject({
      code: 'SPW_ERR_SINK_IO',
      message: expect.stringContaining(`the PostgreSQL sink cannot connect to PostgreSQL at postgres://postgres@127.0.0.1:${port}/test`),
    });
  });
});

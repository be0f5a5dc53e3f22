/**
 * The Redis Streams and PostgreSQL connectors without their services: what a job may
 * say of them (validation), the split ranges and their SQL, and how records become
 * entries and rows. Against the real services: test/cluster/redis-streams.test.ts and
 * test/cluster/postgres.test.ts.
 */
import { describe, expect, test } from 'vitest';
import { ListSupply } from '../../src/connectors/ListSupply.js';
import { SplitAssigner } from '../../src/connectors/SplitAssigner.js';
import { quoteName } from '../../src/connectors/postgres/PostgresClient.js';
import { rowOf, rowsJson } from '../../src/connectors/postgres/PostgresSink.js';
import { rangeSplits, splitQuery } from '../../src/connectors/postgres/PostgresSplits.js';
import { compareIds } from '../../src/connectors/redis/RedisClient.js';
import { commitKey, entryFields } from '../../src/connectors/redis/RedisStreamSink.js';
import { redactUrl } from '../../src/connectors/ServiceConnection.js';
import { JobBuilder } from '../../src/job/api/JobBuilder.js';
import type { JobDefinition, SourceOf } from '../../src/job/JobDefinition.js';
import { isBounded, validateJob } from '../../src/job/JobValidation.js';

const REDIS = 'redis://127.0.0.1:6379';
const PG = 'postgres://postgres@127.0.0.1:5432/test';

/** A job of one stage: `source` into `sink`. */
function job(source: unknown, sink: unknown = { kind: 'discard' }): JobDefinition {
  return { name: 'j', stages: [{ name: 's', source, sink } as never] };
}

function refusal(definition: JobDefinition): string {
  try {
    validateJob(definition, 2);
  } catch (error) {
    expect(error).toMatchObject({ code: 'SPW_ERR_INVALID_JOB' });
    return (error as Error).message;
  }
  throw new Error('the job was accepted');
}

describe('validation', () => {
  test('a Redis stream source needs a redis URL, streams, stream ids for from, and sizes as positive numbers', () => {
    expect(refusal(job({ kind: 'redisStream', url: 'http://x', streams: ['s'] }))).toContain('needs a url of redis: or rediss:, not http:');
    expect(refusal(job({ kind: 'redisStream', url: REDIS, streams: [] }))).toContain('needs streams');
    expect(refusal(job({ kind: 'redisStream', url: REDIS, streams: ['a', 'a'] }))).toContain('names a stream twice');
    expect(refusal(job({ kind: 'redisStream', url: REDIS, streams: 'a', from: 'start' }))).toContain('needs from as a stream id');
    expect(refusal(job({ kind: 'redisStream', url: REDIS, streams: 'a', batchSize: 0 }))).toContain('needs batchSize as a whole number of 1 or more');
    expect(() => validateJob(job({ kind: 'redisStream', url: REDIS, streams: 'a', from: { a: '1700000000000-3' } }), 2)).not.toThrow();
  });

  test('a PostgreSQL source needs a query, and both bounds with a partition column; a sink its table, columns and an upsert key among them', () => {
    expect(refusal(job({ kind: 'postgres', url: PG }))).toContain('needs a query');
    expect(refusal(job({ kind: 'postgres', url: PG, query: 'SELECT 1', partitionColumn: 'id', lowerBound: 0 }))).toContain('needs upperBound as a number');
    expect(refusal(job({ kind: 'postgres', url: PG, query: 'SELECT 1', partitionColumn: 'id', lowerBound: 5, upperBound: 1 }))).toContain('not above upperBound');
    expect(refusal(job({ kind: 'postgres', url: PG, query: 'SELECT 1', partitions: 4 }))).toContain('has partitions but no partitionColumn');
    const source = { kind: 'postgres', url: PG, query: 'SELECT 1' };
    expect(refusal(job(source, { kind: 'postgres', url: PG, table: 't', columns: [] }))).toContain('needs columns');
    expect(refusal(job(source, { kind: 'postgres', url: PG, table: 't', columns: ['a'], upsertKey: 'b' }))).toContain('upsertKey column b, which is not among its columns');
    expect(refusal(job(source, { kind: 'redisStream', url: REDIS }))).toContain('needs a stream key');
  });

  test('readRedisStream is bounded unless told bounded: false, and then refuses an operator that waits for the end of its input', () => {
    const bounded = new JobBuilder('b');
    bounded.readRedisStream({ url: REDIS, streams: 'in' }).writeRedisStream({ url: REDIS, stream: 'out' });
    expect(isBounded(validateJob(bounded.build(), 1))).toBe(true);
    const unbounded = new JobBuilder('u');
    unbounded
      .readRedisStream({ url: REDIS, streams: 'in', bounded: false })
      .map((e) => [e.fields.user, 1] as [string, number])
      .keyBy(([user]) => user)
      .reduce((a, b) => [a[0], a[1] + b[1]])
      .writePostgres({ url: PG, table: 't', columns: ['user', 'n'] });
    expect(() => validateJob(unbounded.build(), 1)).toThrow(expect.objectContaining({ code: 'SPW_ERR_UNBOUNDED_JOB' }));
    const definition = new JobBuilder('d');
    definition.readPostgres({ url: PG, query: 'SELECT 1', partitionColumn: undefined }).discard();
    expect(definition.build().stages[0].source).toEqual({ kind: 'postgres', url: PG, query: 'SELECT 1' });
  });
});

describe('PostgreSQL split ranges', () => {
  const source = (more: Partial<SourceOf<'postgres'>>): SourceOf<'postgres'> => ({ kind: 'postgres', url: PG, query: 'SELECT * FROM t', ...more });

  test('as many ranges as partitions (the parallelism by default), no more than the whole numbers between whole bounds', () => {
    expect(rangeSplits(source({ partitionColumn: 'id', lowerBound: 0, upperBound: 90 }), 3)).toEqual([
      { index: 0, to: 30, nulls: true },
      { index: 1, from: 30, to: 60 },
      { index: 2, from: 60 },
    ]);
    expect(rangeSplits(source({ partitionColumn: 'id', lowerBound: 0, upperBound: 2, partitions: 8 }), 3)).toHaveLength(2);
    expect(rangeSplits(source({ partitionColumn: 'id', lowerBound: 0, upperBound: 1, partitions: 2 }), 3)).toEqual([{ index: 0 }]);
    expect(rangeSplits(source({ partitionColumn: 'x', lowerBound: 0, upperBound: 2.5, partitions: 4 }), 3).map((s) => s.to ?? s.from)).toEqual([0.625, 1.25, 1.875, 1.875]);
    expect(rangeSplits(source({}), 8)).toEqual([{ index: 0 }]);
  });

  test("a split's SQL wraps the query with its range as parameters, its order with orderBy, and an OFFSET once resumed", () => {
    const spec = source({ query: 'SELECT * FROM t;  ', partitionColumn: 'Id', lowerBound: 0, upperBound: 10, orderBy: ['name'] });
    expect(splitQuery(spec, { index: 0, to: 5, nulls: true })).toEqual({
      text: 'SELECT * FROM (SELECT * FROM t) AS spillway_split WHERE ("Id" < $1 OR "Id" IS NULL) ORDER BY "Id", "name"',
      values: [5],
    });
    expect(splitQuery(spec, { index: 1, from: 5, skip: 40 })).toEqual({ text: 'SELECT * FROM (SELECT * FROM t) AS spillway_split WHERE "Id" >= $1 ORDER BY "Id", "name" OFFSET $2', values: [5, 40] });
    expect(splitQuery(source({ partitionColumn: 'x', lowerBound: 0, upperBound: 1 }), { index: 1, from: 0.25, to: 0.5 }).text).toContain('"x" >= $1::numeric AND "x" < $2::numeric');
    expect(splitQuery(source({}), { index: 0 })).toEqual({ text: 'SELECT * FROM t', values: [] });
  });
});

describe('split supplies of fixed lists', () => {
  test('a checkpoint keeps what a list supply has not handed out; a restore goes on with those very splits', () => {
    const splits = [
      { stream: 'a', after: '0', until: '5-0' },
      { stream: 'b', after: '0', until: '9-1' },
      { stream: 'c', after: '0', until: '2-0' },
    ];
    const assigner = new SplitAssigner(new ListSupply(splits));
    expect(assigner.next(0, 0, 0)).toEqual([splits[0]]);
    const snapshot = assigner.snapshotAndHold(2);
    assigner.release();
    expect(snapshot.supply).toEqual([splits[1], splits[2]]);
    expect(assigner.next(1, 0, 0)).toEqual([splits[1]]);
    // Restored (its supply made afresh, as at a new first ask): subtask 0 held its split resumed; b was handed out after the checkpoint.
    const restored = new SplitAssigner(new ListSupply([{ stream: 'a', after: '0', until: '7-0' }]));
    restored.restore(snapshot, [{ subtask: 0, splits: [{ stream: 'a', after: '3-0', until: '5-0' }], received: 1 }]);
    const handed = [restored.next(0, 1, 0), restored.next(1, 1, 0), restored.next(0, 1, 1), restored.next(1, 1, 1)].flat();
    expect(handed).toEqual([{ stream: 'a', after: '3-0', until: '5-0' }, splits[1], splits[2]]);
  });
});

describe('records into entries and rows', () => {
  test('a Redis entry is the record’s fields: strings as they are, bytes as bytes, others as text or JSON; undefined ones left out', () => {
    expect(entryFields({ s: 'x', n: 1.5, b: false, big: 2n, d: new Date(0), o: { a: [1n] }, u: undefined, raw: new Uint8Array([7]) })).toEqual([
      's', 'x', 'n', '1.5', 'b', 'false', 'big', '2', 'd', '1970-01-01T00:00:00.000Z', 'o', '{"a":["1"]}', 'raw', Buffer.from([7]),
    ]);
    expect(() => entryFields({ u: undefined })).toThrow(expect.objectContaining({ code: 'SPW_ERR_SINK_RECORD' }));
    expect(commitKey({ kind: 'redisStream', url: REDIS, stream: 'clicks' }, 'job-0001-x', 3)).toBe('spillway:sink:clicks:job-0001-x:3');
  });

  test('a PostgreSQL row is the values of its columns, as JSON its columns read: bytes as bytea hex, bigints as numbers, NaN as a word', () => {
    expect(rowOf({ a: 1, b: 'x', extra: true }, ['b', 'a', 'missing'])).toEqual(['x', 1, undefined]);
    expect(rowsJson(['a', 'b'], [[Buffer.from([1, 255]), 12345678901234567890n], [Number.NaN, { k: new Date(0) }], [null, undefined]])).toBe(
      '[{"a":"\\\\x01ff","b":12345678901234567890},{"a":"NaN","b":{"k":"1970-01-01T00:00:00.000Z"}},{"a":null,"b":null}]',
    );
    expect(JSON.parse(rowsJson(['t'], [['"quoted"\n']]))).toEqual([{ t: '"quoted"\n' }]);
  });

  test('names and ids: a table is quoted part by part, stream ids are ordered as Redis orders them, a password never shows', () => {
    expect(quoteName('public.Totals')).toBe('"public"."Totals"');
    expect(quoteName('"my.schema".t')).toBe('"my.schema"."t"');
    expect(compareIds('10-0', '9-5')).toBe(1);
    expect(compareIds('5', '5-0')).toBe(0);
    expect(compareIds('18446744073709551615-1', '18446744073709551615-2')).toBe(-1);
    expect(redactUrl('redis://:hunter2@host:6379/1')).toBe('redis://:***@host:6379/1');
    expect(redactUrl('postgres://u:p@h/db')).toBe('postgres://u:***@h/db');
    expect(redactUrl('postgres://u@h/db')).toBe('postgres://u@h/db');
  });
});

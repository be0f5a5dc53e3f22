import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { NexmarkGenerator, type NexmarkEvent } from '../../src/connectors/nexmark/NexmarkGenerator.js';
import { BUILTIN_JOBS } from '../../src/job/BuiltinJobs.js';
import { Catalog } from '../../src/sql/Catalog.js';
import { sqlJob } from '../../src/sql/SqlJob.js';
import { type SqlResult, SqlSession } from '../../src/sql/SqlSession.js';
import { runLocalJob } from '../helpers/localJob.js';
import { NEXMARK_SQL_QUERIES, nexmarkSql } from '../helpers/nexmarkSql.js';
import { finalTable, SQL_REFERENCE, type SqlRow } from '../helpers/nexmarkSqlReference.js';

const EVENTS = 5_000;
const PARALLELISM = 2;
const COUNT_CHAR = path.join(import.meta.dirname, '../fixtures/sql/count_char.mjs');

function allEvents(): NexmarkEvent[] {
  const generator = new NexmarkGenerator({ events: EVENTS, seed: 0 });
  const out: NexmarkEvent[] = [];
  for (let e = generator.next(); e !== null; e = generator.next()) out.push(e);
  return out;
}

let dir: string;
const sideInput = new Map<number, string>();

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-sql-nexmark-'));
  fs.mkdirSync(path.join(dir, 'data'));
  const lines: string[] = [];
  for (let key = 1000; key < 1400; key += 3) {
    sideInput.set(key, `side-${key}`);
    lines.push(`${key},side-${key}`);
  }
  fs.writeFileSync(path.join(dir, 'data/side_input.txt'), `${lines.join('\n')}\n`);
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * The suite's statements for one query, as written but for the placeholders and the sink:
 * its blackhole table made a print table, whose rows the test collects.
 */
function plan(name: string): Extract<SqlResult, { kind: 'job' }> {
  const session = new SqlSession(new Catalog());
  const values = { events: EVENTS, tps: 0, dir, countCharModule: COUNT_CHAR };
  session.execute(nexmarkSql('ddl_gen', values));
  session.execute(nexmarkSql('ddl_views', values));
  const results = session.execute(nexmarkSql(name, values).replace(/'connector' = 'blackhole'/g, "'connector' = 'print'"));
  const job = results.find((r) => r.kind === 'job');
  if (job?.kind !== 'job') throw new Error(`${name} gave no job`);
  return job;
}

async function run(name: string): Promise<unknown[]> {
  const { collected } = await runLocalJob(sqlJob(plan(name).submission.params as unknown as Record<string, unknown>), { parallelism: PARALLELISM });
  return [...collected.values()].flatMap((parts) => [...parts.values()].flat());
}

const sorted = (rows: readonly SqlRow[]): string[] => rows.map((r) => JSON.stringify(r)).sort();

describe("the Nexmark suite's SQL, run as written over the generator's bounded stream", () => {
  const events = allEvents();
  const compared = NEXMARK_SQL_QUERIES.filter((q) => SQL_REFERENCE[q] !== undefined && q !== 'q19' && q !== 'q18');

  test.each(compared)("%s gives the reference's rows", async (name) => {
    const expected = sorted(SQL_REFERENCE[name]!(events, { sideInput }));
    expect(expected.length, 'the reference has rows').toBeGreaterThan(0);
    expect(finalTable(await run(name))).toEqual(expected);
  });

  test("q19 gives each auction's ten highest bids, ranked 1 to 10", async () => {
    const table = finalTable(await run('q19')).map((json) => JSON.parse(json) as SqlRow);
    const ranks = new Map<unknown, number[]>();
    for (const row of table) ranks.set(row.auction, [...(ranks.get(row.auction) ?? []), row.rank_number as number]);
    for (const list of ranks.values()) expect(list.sort((a, b) => a - b)).toEqual(list.map((_, i) => i + 1));
    const rows = table.map(({ rank_number: _rank, ...row }) => row);
    expect(sorted(rows)).toEqual(sorted(SQL_REFERENCE.q19!(events, {})));
  });

  test("q18 gives each bidder's last bid on each auction (one of them where several came in the same millisecond)", async () => {
    const table = finalTable(await run('q18')).map((json) => JSON.parse(json) as SqlRow);
    const key = (r: SqlRow): string => JSON.stringify([r.auction, r.bidder, r.dateTime]);
    expect(table.map(key).sort()).toEqual(SQL_REFERENCE.q18!(events, {}).map(key).sort());
    const bids = new Set(SQL_REFERENCE.q0!(events, {}).map((r) => JSON.stringify([r.auction, r.bidder, r.price, r.dateTime, r.extra])));
    for (const r of table) expect(bids.has(JSON.stringify([r.auction, r.bidder, r.price, r.dateTime, r.extra]))).toBe(true);
  });

  test('q10 writes every bid to CSV files in the folder of its day and minute (PARTITIONED BY (dt, hm))', async () => {
    await run('q10');
    const root = path.join(dir, 'data/output/run/bid');
    const lines = fs.readdirSync(root).flatMap((dt) =>
      fs.readdirSync(path.join(root, dt)).flatMap((hm) =>
        fs.readdirSync(path.join(root, dt, hm)).flatMap((f) => fs.readFileSync(path.join(root, dt, hm, f), 'utf8').split('\n').filter((l) => l !== '').map((l) => ({ dt, hm, l }))),
      ),
    );
    const bids = events.filter((e) => e.type === 'bid').length;
    expect(lines).toHaveLength(bids);
    // The dateTime field (the fourth) is in the day and minute its folders name.
    for (const { dt, hm, l } of lines) expect(`${dt}/${hm}`).toBe(`dt=${l.split(',')[3]!.slice(0, 10)}/hm=${l.split(',')[3]!.slice(11, 16).replace(':', '%3A')}`);
  });

  test("q12 counts every bid once in processing-time windows", async () => {
    const rows = finalTable(await run('q12')).map((json) => JSON.parse(json) as SqlRow);
    expect(rows.reduce((n, r) => n + (r.bid_count as number), 0)).toBe(events.filter((e) => e.type === 'bid').length);
  });

  test.each([
    ['q0', (r: SqlRow) => r],
    ['q1', (r: SqlRow) => r],
    ['q2', (r: SqlRow) => r],
    ['q3', (r: SqlRow) => r],
    ['q5', (r: SqlRow) => ({ auction: r.auction, num: r.num })],
    ['q11', (r: SqlRow) => ({ bidder: r.bidder, bid_count: r.count, starttime: r.start, endtime: r.end })],
  ] as const)('%s gives the rows of the built-in job of the same query', async (name, shape) => {
    const { collected } = await runLocalJob(BUILTIN_JOBS[`nexmark-${name}`]!({ events: EVENTS, seed: 0 }), { parallelism: PARALLELISM });
    const ts = (v: unknown): unknown => (typeof v === 'number' && v > 1e12 ? new Date(v).toISOString().replace('T', ' ').replace('Z', '') : v);
    const builtin = [...collected.values()].flatMap((parts) => [...parts.values()].flat()).map((r) => {
      const row = shape(r as SqlRow);
      return Object.fromEntries(Object.entries(row).filter(([k]) => k !== 'channel' && k !== 'url').map(([k, v]) => [k, ts(v)]));
    });
    expect(finalTable(await run(name))).toEqual(sorted(builtin));
  });
});

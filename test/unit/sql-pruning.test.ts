/**
 * Columns a statement never reads are not read: a source decodes the columns named anywhere in
 * the statement or in the views it reads, and a view's plain projection keeps only the columns
 * the statement names (a join then holds only those in its state). Results equal a reference.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { Catalog } from '../../src/sql/Catalog.js';
import { sqlJob } from '../../src/sql/SqlJob.js';
import { SqlSession } from '../../src/sql/SqlSession.js';
import { runLocalJob } from '../helpers/localJob.js';
import { nexmarkSql } from '../helpers/nexmarkSql.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-sql-pruning-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

type JobResult = { kind: string; submission: { params: Record<string, unknown> } };

async function run(session: SqlSession, insert: string): Promise<void> {
  const [result] = session.execute(insert) as unknown as JobResult[];
  expect(result?.kind).toBe('job');
  await runLocalJob(sqlJob(result!.submission.params), { parallelism: 2 });
}

function rows(folder: string): Record<string, unknown>[] {
  return fs.readdirSync(path.join(dir, folder)).flatMap((f) =>
    fs
      .readFileSync(path.join(dir, folder, f), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  );
}

function steps(session: SqlSession, query: string): string[] {
  const [result] = session.execute(`EXPLAIN ${query}`);
  return (result as { rows: string[][] }).rows.map((r) => r[1]!);
}

describe('column pruning', () => {
  test('a view computing a column from others, read through a CSV projection: the columns it reads are decoded', async () => {
    const lines = Array.from({ length: 300 }, (_, i) => `${i},${i * 7 % 13},w${i % 5}`);
    fs.writeFileSync(path.join(dir, 'in.csv'), `${lines.join('\n')}\n`);
    const session = new SqlSession(new Catalog());
    session.execute(`SET 'execution.runtime-mode' = 'batch';
      CREATE TABLE t (a INT, b INT, c STRING) WITH ('connector' = 'filesystem', 'path' = '${dir}/in.csv', 'format' = 'csv');
      CREATE VIEW v AS SELECT a + b AS x, c FROM t;
      CREATE TABLE out (x INT) WITH ('connector' = 'filesystem', 'path' = '${dir}/out', 'format' = 'json');`);
    await run(session, 'INSERT INTO out SELECT x FROM v WHERE x > 100;');
    const expected = Array.from({ length: 300 }, (_, i) => i + ((i * 7) % 13)).filter((x) => x > 100);
    expect(rows('out').map((r) => r.x as number).sort((p, q) => p - q)).toEqual(expected.sort((p, q) => p - q));
  });

  test("Nexmark's views keep only what q4 reads before its join, and q4's rows equal those of the views unpruned", async () => {
    const session = new SqlSession(new Catalog());
    session.execute(nexmarkSql('ddl_gen', { events: 3000, tps: 0 }));
    session.execute(nexmarkSql('ddl_views', { events: 3000 }));
    const q4 = nexmarkSql('q4', { events: 3000 }).replace(/[\s\S]*INSERT INTO nexmark_q4/, '').replace(/;\s*$/, '');
    const calcs = steps(session, q4).filter((s) => s.startsWith('Calc (filter, projection of'));
    // auction: id, dateTime, expires, category of its 10; bid: auction, price, dateTime of its 7.
    expect(calcs).toEqual(['Calc (filter, projection of 4)', 'Calc (filter, projection of 3)']);
    session.execute("SET 'execution.runtime-mode' = 'batch';");
    const pruned = await collect(session, q4);
    expect(pruned.length).toBeGreaterThan(0);
    // SELECT * reads every column: nothing is pruned.
    expect(sorted(pruned)).toEqual(sorted(await collect(session, `SELECT * FROM (${q4}) AS everything`)));
  });
});

async function collect(session: SqlSession, query: string): Promise<unknown[]> {
  const name = `q${fs.readdirSync(dir).length}`;
  session.execute(`CREATE TABLE ${name} (category BIGINT, avg_final DOUBLE) WITH ('connector' = 'filesystem', 'path' = '${dir}/${name}', 'format' = 'json');`);
  await run(session, `INSERT INTO ${name} ${query};`);
  return rows(name);
}

const sorted = (list: unknown[]): string[] => list.map((r) => JSON.stringify(r)).sort();

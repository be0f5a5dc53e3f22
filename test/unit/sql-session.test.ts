import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { JobStore } from '../../src/jobmanager/store/JobStore.js';
import { Catalog } from '../../src/sql/Catalog.js';
import { sqlJob } from '../../src/sql/SqlJob.js';
import { SqlError } from '../../src/sql/SqlError.js';
import { SqlSession } from '../../src/sql/SqlSession.js';
import { runLocalJob } from '../helpers/localJob.js';
import { nexmarkSql } from '../helpers/nexmarkSql.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-sql-session-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function nexmarkSession(): SqlSession {
  const session = new SqlSession(new Catalog());
  session.execute(nexmarkSql('ddl_gen', { events: 2000, tps: 0 }));
  session.execute(nexmarkSql('ddl_views', { events: 2000 }));
  return session;
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return (error as SqlError).code;
  }
  return undefined;
}

describe('a SQL session', () => {
  test("EXPLAIN gives the logical steps and the stages, with their exchanges and state", () => {
    const [result] = nexmarkSession().execute(nexmarkSql('q5', { events: 2000 }).replace(/[\s\S]*INSERT INTO nexmark_q5/, 'EXPLAIN'));
    expect(result?.kind).toBe('table');
    const steps = (result as { rows: string[][] }).rows.map((r) => `${r[0]}: ${r[1]}`);
    expect(steps.filter((s) => s.startsWith('logical: WindowAggregate'))).toHaveLength(3);
    expect(steps.some((s) => s.startsWith('logical: Join inner on 2 keys with a residual condition'))).toBe(true);
    expect(steps.some((s) => /^physical: stage .*hash exchange from .* -> window \(state\)/.test(s))).toBe(true);
  });

  test('EXECUTE STATEMENT SET runs its inserts as one job, each into its sink', async () => {
    const session = nexmarkSession();
    session.execute(`CREATE TABLE cheap (auction BIGINT, price BIGINT) WITH ('connector' = 'filesystem', 'path' = '${dir}/cheap', 'format' = 'json');
      CREATE TABLE dear (auction BIGINT, price BIGINT) WITH ('connector' = 'filesystem', 'path' = '${dir}/dear', 'format' = 'csv');`);
    const results = session.execute(`EXECUTE STATEMENT SET BEGIN
      INSERT INTO cheap SELECT auction, price FROM bid WHERE price < 1000;
      INSERT INTO dear SELECT auction, price FROM bid WHERE price >= 1000;
    END;`);
    expect(results.map((r) => r.kind)).toEqual(['job']);
    await runLocalJob(sqlJob((results[0] as unknown as { submission: { params: Record<string, unknown> } }).submission.params), { parallelism: 2 });
    const lines = (folder: string): string[] => fs.readdirSync(path.join(dir, folder)).flatMap((f) => fs.readFileSync(path.join(dir, folder, f), 'utf8').split('\n').filter((l) => l !== ''));
    expect(lines('cheap').length + lines('dear').length).toBe(1840);
    expect(lines('cheap').every((l) => (JSON.parse(l) as { price: number }).price < 1000)).toBe(true);
  });

  test('an updating result into an append-only sink is refused at planning, naming why', () => {
    const session = nexmarkSession();
    session.execute(`CREATE TABLE counts (auction BIGINT, n BIGINT) WITH ('connector' = 'filesystem', 'path' = '${dir}/counts', 'format' = 'json');`);
    let error: SqlError | undefined;
    try {
      session.execute('INSERT INTO counts SELECT auction, COUNT(*) FROM bid GROUP BY auction;');
    } catch (e) {
      error = e as SqlError;
    }
    expect(error?.code).toBe('SPW_ERR_SQL_UNSUPPORTED');
    expect(error?.message).toContain('append-only');
  });

  test('SET takes the keys it knows; DROP and DESCRIBE answer for what the catalogue holds', () => {
    const session = nexmarkSession();
    expect(codeOf(() => session.execute("SET 'no.such.key' = '1';"))).toBe('SPW_ERR_SQL_UNSUPPORTED');
    expect(session.execute('DESCRIBE bid;')[0]).toMatchObject({ kind: 'table', rows: [['auction'], ['bidder'], ['price'], ['channel'], ['url'], ['dateTime'], ['extra']] });
    session.execute('DROP VIEW bid;');
    expect(codeOf(() => session.execute('SELECT * FROM bid;'))).toBe('SPW_ERR_SQL_UNKNOWN_TABLE');
    expect(codeOf(() => session.execute('DROP TABLE nothing;'))).toBe('SPW_ERR_SQL_UNKNOWN_TABLE');
    session.execute('DROP TABLE IF EXISTS nothing;');
  });

  test("the catalogue survives the JobManager's store being closed and opened again", async () => {
    const session = nexmarkSession();
    const store = JobStore.open(path.join(dir, 'store'));
    await store.putCatalog(session.catalog.snapshot());
    await store.close();
    const reopened = JobStore.open(path.join(dir, 'store'));
    try {
      const again = new SqlSession(new Catalog(reopened.getCatalog()));
      expect(again.execute('SHOW TABLES;')[0]).toMatchObject({ rows: [['auction'], ['bid'], ['datagen'], ['person']] });
      expect(again.execute('SELECT auction FROM bid;')[0]?.kind).toBe('job');
    } finally {
      await reopened.close();
    }
  });
});

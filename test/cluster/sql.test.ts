import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { callJson } from '../../src/rpc/HttpClient.js';
import { clusterTest } from '../helpers/cluster.js';
import { spillway } from '../helpers/command.js';

const test = clusterTest({ taskManagers: 1, slots: 2 });

let dir: string;
let url: string;
let token: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-sql-'));
  const lines = Array.from({ length: 200 }, (_, i) => `${i},${['red', 'green', 'blue'][i % 3]},${i * 10}`);
  fs.writeFileSync(path.join(dir, 'orders.csv'), `${lines.join('\n')}\n`);
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

test.beforeAll(({ cluster }) => {
  url = cluster.url;
  token = cluster.secret.token;
});

/** POST /sql's answer, whatever its status. */
async function postSql(statements: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}/sql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ statements }) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('SQL on a cluster', () => {
  test('spillway sql runs a file: DDL, a batch INSERT as a job, and a SELECT printed as a table', async () => {
    const file = path.join(dir, 'colors.sql');
    fs.writeFileSync(
      file,
      `SET 'execution.runtime-mode' = 'batch';
CREATE TABLE orders (id BIGINT, color STRING, amount BIGINT) WITH ('connector' = 'filesystem', 'path' = '${dir}/orders.csv', 'format' = 'csv');
CREATE TABLE totals (color STRING, n BIGINT, total BIGINT) WITH ('connector' = 'filesystem', 'path' = '${dir}/totals', 'format' = 'json');
INSERT INTO totals SELECT color, COUNT(*), SUM(amount) FROM orders GROUP BY color;
SELECT color, COUNT(*) AS n FROM orders WHERE amount >= 1000 GROUP BY color HAVING COUNT(*) > 10 ORDER BY color LIMIT 2;
`,
    );
    const run = await spillway('sql', file, '--jobmanager', url, '--wait');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.match(/^submitted \S+$/gm)).toHaveLength(2);
    expect(run.stdout).toContain('| blue  | 33 |');
    expect(run.stdout).toContain('| green | 34 |');
    expect(run.stdout).toContain('2 rows in set');
    // --wait: what each job's source read, exactly (both jobs read the whole file).
    const size = fs.statSync(path.join(dir, 'orders.csv')).size;
    expect(run.stdout.match(new RegExp(`^job-\\S+ FINISHED in [\\d.]+ s; read 200 records, ${size} bytes \\(\\d+ records/s, [\\d.]+ MB/s\\); \\d+ records shuffled`, 'gm'))).toHaveLength(2);
    const written = fs.readdirSync(path.join(dir, 'totals')).flatMap((f) => fs.readFileSync(path.join(dir, 'totals', f), 'utf8').split('\n').filter((l) => l !== ''));
    const expected = ['red', 'green', 'blue'].map((color, c) => {
      const ids = Array.from({ length: 200 }, (_, i) => i).filter((i) => i % 3 === c);
      return JSON.stringify({ color, n: ids.length, total: ids.reduce((s, i) => s + i * 10, 0) });
    });
    expect(written.sort()).toEqual(expected.sort());
  });

  test('spillway sql --jobmanager URL1,URL2 runs the statements on the one that leads, as submit does', async () => {
    const file = path.join(dir, 'show.sql');
    fs.writeFileSync(file, 'SHOW TABLES;\n');
    const run = await spillway('sql', file, '--jobmanager', `${url},http://127.0.0.1:1`, '--format', 'csv');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n')[0]).toBe('table name');
  });

  test('submit --wait reports what the sources read, records and bytes exactly, beside the few records a map-side combine shuffles', async () => {
    const job = path.join(dir, 'count-colors.mjs');
    fs.writeFileSync(
      job,
      `const key = (r) => r[1];
export default (params) => ({
  name: 'count-colors',
  stages: [
    { name: 'read', source: { kind: 'csv', path: params.input, columns: { 1: 'string' } } },
    { name: 'count', inputs: [{ from: 'read', partitioning: { type: 'hash', key } }], operators: [{ kind: 'combineByKey', combineByKey: { key, create: () => 1, merge: (n) => n + 1, mergeCombiners: (a, b) => a + b } }], sink: { kind: 'collect' } },
  ],
});
`,
    );
    const run = await spillway('submit', job, '--jobmanager', url, '--param', `input=${dir}/orders.csv`, '--wait');
    expect(run.code).toBe(0);
    const size = fs.statSync(path.join(dir, 'orders.csv')).size;
    const summary = new RegExp(`^job-\\S+ FINISHED in [\\d.]+ s; read 200 records, ${size} bytes \\(\\d+ records/s, [\\d.]+ MB/s\\); (\\d+) records shuffled`, 'm').exec(run.stdout);
    expect(summary, run.stdout).not.toBeNull();
    // Three colours, combined in each of at most 2 reading tasks.
    expect(Number(summary![1])).toBeLessThanOrEqual(6);
  });

  test('the catalogue lives in the JobManager: a later request sees the tables; a SQL job shows its statement and plan', async () => {
    const { body } = await postSql('SHOW TABLES; DESCRIBE orders;');
    const [tables, describe] = body.results as { rows: unknown[][] }[];
    expect(tables!.rows).toEqual([['orders'], ['totals']]);
    expect(describe!.rows.map((r) => r.slice(0, 2))).toEqual([['id', 'BIGINT'], ['color', 'STRING'], ['amount', 'BIGINT']]);
    const submitted = await postSql("SET 'execution.runtime-mode' = 'batch'; SELECT color FROM orders WHERE id < 3;");
    const job = (submitted.body.results as { kind: string; id?: string }[]).find((r) => r.kind === 'job')!;
    const details = await callJson<{ sql: { statement: string; plan: string[] } }>('GET', `${url}/jobs/${job.id}`);
    expect(details.sql.statement).toBe('SELECT color FROM orders WHERE id < 3');
    expect(details.sql.plan.some((line) => line.startsWith('Scan orders'))).toBe(true);
  });

  test.each([
    ['SPW_ERR_SQL_SYNTAX', 'SHOW TABLES;\nSELECT color,\n  FROM orders;', 3, 3],
    ['SPW_ERR_SQL_UNKNOWN_TABLE', 'SHOW TABLES;\nSELECT a FROM nowhere;', 2, 15],
    ['SPW_ERR_SQL_UNKNOWN_COLUMN', 'SELECT color,\n  price FROM orders;', 2, 3],
    ['SPW_ERR_SQL_UNKNOWN_FUNCTION', 'SELECT frobnicate(color) FROM orders;', 1, 8],
    ['SPW_ERR_SQL_TYPE', 'SELECT SUBSTRING(color) FROM orders;', 1, 8],
    ['SPW_ERR_SQL_UNSUPPORTED', 'INSERT INTO totals SELECT color, COUNT(*), SUM(amount) FROM orders GROUP BY color;', 1, 1],
  ])('%s: its code, line and column, and nothing submitted', async (code, statements, line, column) => {
    const before = (await callJson<{ jobs: unknown[] }>('GET', `${url}/jobs`)).jobs.length;
    const { status, body } = await postSql(`CREATE TABLE t_${code.toLowerCase()} (a INT) WITH ('connector' = 'blackhole');\n${statements}`);
    expect(status).toBe(400);
    expect(body.code).toBe(code);
    expect([body.line, body.column]).toEqual([line + 1, column]);
    expect(String(body.error)).toContain('^');
    expect((await callJson<{ jobs: unknown[] }>('GET', `${url}/jobs`)).jobs).toHaveLength(before);
    const { body: shown } = await postSql('SHOW TABLES;');
    expect(JSON.stringify(shown)).not.toContain(`t_${code.toLowerCase()}`);
  });
});

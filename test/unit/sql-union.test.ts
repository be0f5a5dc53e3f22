import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Catalog } from '../../src/sql/Catalog.js';
import { sqlJob } from '../../src/sql/SqlJob.js';
import { SqlSession } from '../../src/sql/SqlSession.js';
import { runLocalJob } from '../helpers/localJob.js';
import { finalTable } from '../helpers/nexmarkSqlReference.js';

interface Row {
  k: string;
  v: number;
}

let dir: string;
const left: Row[] = [];
const right: Row[] = [];

/** Seeded rows with many duplicates, within each table and across the two. */
beforeAll(() => {
  let seed = 5;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return (seed >>> 12) % n;
  };
  for (let i = 0; i < 1500; i++) left.push({ k: ['a', 'b', 'c'][next(3)]!, v: next(40) });
  for (let i = 0; i < 1500; i++) right.push({ k: ['b', 'c', 'd'][next(3)]!, v: next(60) });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-sql-union-'));
  fs.writeFileSync(path.join(dir, 'l.jsonl'), left.map((r) => JSON.stringify(r)).join('\n') + '\n');
  fs.writeFileSync(path.join(dir, 'r.jsonl'), right.map((r) => JSON.stringify(r)).join('\n') + '\n');
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The records a query's job collects, in streaming mode. */
async function collect(query: string): Promise<unknown[]> {
  const session = new SqlSession(new Catalog());
  session.execute(`
    CREATE TABLE l (k STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '${dir}/l.jsonl', 'format' = 'json');
    CREATE TABLE r (k STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '${dir}/r.jsonl', 'format' = 'json');
  `);
  const [result] = session.execute(query);
  if (result?.kind !== 'job') throw new Error('no job');
  expect(result.updating).toBe(true);
  const { collected } = await runLocalJob(sqlJob(result.submission.params as unknown as Record<string, unknown>), { parallelism: 2 });
  return [...collected.values()].flatMap((parts) => [...parts.values()].flat());
}

const distinctRows = (rows: readonly object[]): string[] => [...new Set(rows.map((r) => JSON.stringify(r)))].sort();

describe('UNION (distinct) in streaming mode is an updating result of each distinct row once', () => {
  test('UNION of two tables gives each row of either once, as inserts', async () => {
    const records = await collect('SELECT k, v FROM l UNION SELECT k, v FROM r;');
    expect(finalTable(records)).toEqual(distinctRows([...left, ...right]));
    expect(records.every((c) => (c as { op: string }).op === '+I')).toBe(true);
  });

  test('UNION of a filtered projection and UNION ALL of the other equals the distinct rows of all three', async () => {
    const records = await collect('SELECT k FROM l WHERE v < 10 UNION SELECT k FROM r UNION ALL SELECT k FROM l;');
    // UNION binds left to right: (a UNION b) UNION ALL c keeps c's duplicates beside the distinct rows of a and b.
    const first = distinctRows([...left.filter((r) => r.v < 10), ...right].map((r) => ({ k: r.k })));
    const all = left.map((r) => JSON.stringify({ k: r.k }));
    expect(finalTable(records)).toEqual([...first, ...all].sort());
  });
});

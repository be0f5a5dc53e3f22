import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { sinkSpec } from '../../src/connectors/Sinks.js';
import { Catalog } from '../../src/sql/Catalog.js';
import { sqlJob } from '../../src/sql/SqlJob.js';
import { SqlSession } from '../../src/sql/SqlSession.js';
import { runLocalJob } from '../helpers/localJob.js';

const PARALLELISM = 2;
interface Sale {
  region: string | null;
  day: string;
  amount: number;
  id: number;
}
const sales: Sale[] = [];
let dir: string;

/** Seeded sales over three regions (one with a slash, some with none) and four days. */
beforeAll(() => {
  let seed = 3;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return (seed >>> 12) % n;
  };
  for (let id = 0; id < 400; id++) sales.push({ id, region: ['north', 'south/east', null][next(3)]!, day: `2026-12-0${1 + next(4)}`, amount: next(1000) });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-sql-partitioned-'));
  fs.writeFileSync(path.join(dir, 'sales.jsonl'), sales.map((s) => JSON.stringify(s)).join('\n') + '\n');
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Runs an INSERT as a bounded job and commits its sink as the JobManager does when it finishes. */
async function insert(format: string, out: string): Promise<void> {
  const session = new SqlSession(new Catalog());
  session.execute(`
    SET 'execution.runtime-mode' = 'batch';
    CREATE TABLE sales (id BIGINT, region STRING, day STRING, amount BIGINT) WITH ('connector' = 'filesystem', 'path' = '${dir}/sales.jsonl', 'format' = 'json');
    CREATE TABLE out (id BIGINT, amount BIGINT, region STRING, day STRING) PARTITIONED BY (region, day) WITH ('connector' = 'filesystem', 'path' = '${out}', 'format' = '${format}');
  `);
  const [result] = session.execute('INSERT INTO out SELECT id, amount, region, day FROM sales;');
  if (result?.kind !== 'job') throw new Error('no job');
  const job = sqlJob(result.submission.params as unknown as Record<string, unknown>);
  await runLocalJob(job, { parallelism: PARALLELISM });
  for (const stage of job.stages) if (stage.sink !== undefined) sinkSpec(stage.sink).commit?.(stage.sink, 'local', new Array<number>(PARALLELISM).fill(0));
}

/** Every visible file under `root`, by its folder relative to it. */
function files(root: string): [string, string][] {
  const out: [string, string][] = [];
  const walk = (folder: string): void => {
    for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(full);
      else out.push([path.relative(root, folder), full]);
    }
  };
  walk(root);
  return out;
}

const folderOf = (s: Sale): string => `region=${s.region === null ? '__DEFAULT_PARTITION__' : s.region.replace('/', '%2F')}/day=${s.day}`;

describe("PARTITIONED BY on a filesystem sink writes a folder per partition value, as Flink's filesystem connector", () => {
  test('JSON: each row in its region=.../day=... folder, without the partition columns', async () => {
    const out = path.join(dir, 'json');
    await insert('json', out);
    const got = files(out).flatMap(([folder, file]) => fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => `${folder} ${l}`));
    expect(got.sort()).toEqual(sales.map((s) => `${folderOf(s)} ${JSON.stringify({ id: s.id, amount: s.amount })}`).sort());
    expect(files(out).every(([, file]) => /^part-\d{5}$/.test(path.basename(file)))).toBe(true);
  });

  test('CSV: the same folders, the other columns as fields', async () => {
    const out = path.join(dir, 'csv');
    await insert('csv', out);
    const got = files(out).flatMap(([folder, file]) => fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => `${folder} ${l}`));
    expect(got.sort()).toEqual(sales.map((s) => `${folderOf(s)} ${s.id},${s.amount}`).sort());
  });

  test('a second run replaces the first run\'s part files in each folder', async () => {
    const out = path.join(dir, 'again');
    await insert('json', out);
    const first = files(out).length;
    await insert('json', out);
    expect(files(out)).toHaveLength(first);
  });
});

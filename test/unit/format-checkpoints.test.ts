import fs from 'node:fs';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { sourceSpec } from '../../src/connectors/Sources.js';
import type { HeldSplits, SourceContext } from '../../src/connectors/SourceSpec.js';
import type { Source } from '../../src/job/JobDefinition.js';
import { writeAll } from '../helpers/connectors.js';
import { tempDir } from '../helpers/plane.js';

const work = tempDir('format-checkpoints');
afterAll(() => work.remove());

/** One task reading `splits` in turn; what it pushed, and each point it could resume at with the records pushed before it. */
async function read(source: Source, splits: unknown[]): Promise<{ records: unknown[]; points: { held: HeldSplits; pushed: number }[] }> {
  const records: unknown[] = [];
  const points: { held: HeldSplits; pushed: number }[] = [];
  let given = false;
  const context: SourceContext = {
    subtask: 0,
    parallelism: 1,
    push: (record) => void records.push(record),
    nextSplits: async () => (given ? [] : ((given = true), splits)),
    pause: async () => undefined,
    sleep: async () => undefined,
    wait: (promise) => promise,
    malformed: () => undefined,
    read: () => undefined,
    checkpointable: (position) => void points.push({ held: position as HeldSplits, pushed: records.length }),
    restored: [],
  };
  await sourceSpec(source).read(source, context);
  return { records, points };
}

/** Every point a reader said it could resume at, resumed: the records before it and those read from it are the input's, once each. */
async function expectResumable(source: Source, splits: unknown[], expected: unknown[]): Promise<void> {
  const whole = await read(source, splits);
  expect(JSON.stringify(whole.records)).toBe(JSON.stringify(expected));
  const inside = whole.points.filter((p) => p.pushed > 0 && p.pushed < whole.records.length);
  expect(inside.length, 'points inside the input').toBeGreaterThan(1);
  // Three of them, spread over the input, keep the test short.
  const step = Math.max(1, Math.floor(inside.length / 3));
  for (const point of inside.filter((_, i) => i % step === 0)) {
    const rest = await read(source, point.held.splits);
    // Compared as JSON: a deep equality of 100,000 records takes seconds.
    expect(JSON.stringify([...whole.records.slice(0, point.pushed), ...rest.records]), `resumed after ${point.pushed} records`).toBe(JSON.stringify(whole.records));
  }
}

const rows = Array.from({ length: 40_000 }, (_, i) => ({ id: i, name: `name "${i}", \n${'é'.repeat(i % 5)}`, price: i / 8 }));

test('a JSON Lines reader resumed where it could be checkpointed reads the rest of its split, no line lost or read twice', async () => {
  const file = path.join(work.dir, 'a.jsonl');
  fs.writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  await expectResumable({ kind: 'jsonLines', path: file }, [{ file, start: 0, end: fs.statSync(file).size }], rows);
});

test('a CSV reader resumed where it could be checkpointed reads the rest of its split, the header read again from the file', async () => {
  const folder = path.join(work.dir, 'csv');
  // Plain CSV is cut every megabyte or so: about 3 MB.
  const records = [...rows, ...rows.map((r) => ({ ...r, id: r.id + rows.length }))];
  await writeAll({ kind: 'csv', path: folder, header: true }, [records]);
  const file = path.join(folder, 'part-00000');
  await expectResumable({ kind: 'csv', path: file, header: true, columns: { id: 'number', name: 'string', price: 'number' } }, [{ file, start: 0, end: fs.statSync(file).size }], records);
});

test('a Parquet reader resumed where it could be checkpointed reads the rest of its row groups', async () => {
  const folder = path.join(work.dir, 'parquet');
  await writeAll({ kind: 'parquet', path: folder, schema: { id: 'INT32', name: 'UTF8', price: 'DOUBLE' }, rowGroupRows: 15_000 }, [rows]);
  const file = path.join(folder, 'part-00000.parquet');
  const groups = [0, 15_000, 30_000].map((rowStart, rowGroup) => ({ file, rowGroup, rowStart, rowEnd: Math.min(rowStart + 15_000, rows.length) }));
  await expectResumable({ kind: 'parquet', path: file }, groups, rows);
});

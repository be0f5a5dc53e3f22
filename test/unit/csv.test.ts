import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, describe, expect, test } from 'vitest';
import { isAscii } from 'node:buffer';
import { CsvColumns } from '../../src/connectors/csv/CsvColumns.js';
import { CsvRecords } from '../../src/connectors/csv/CsvRecords.js';
import { CsvScanner } from '../../src/connectors/csv/CsvScanner.js';
import { QuoteParityAligner } from '../../src/connectors/csv/CsvSplits.js';
import { sourceSpec } from '../../src/connectors/Sources.js';
import type { SourceContext } from '../../src/connectors/SourceSpec.js';
import type { TextSplit } from '../../src/connectors/text/TextSplits.js';
import { seededRandom } from '../../src/job/Corpus.js';
import type { Source } from '../../src/job/JobDefinition.js';
import { byJson, readAll, writeAll } from '../helpers/connectors.js';
import { tempDir } from '../helpers/plane.js';
import { Soup } from '../helpers/records.js';

const work = tempDir('csv');
afterAll(() => work.remove());

/** Reads the given splits of a source as one task each (as the JobManager could hand them out), in order. */
async function readSplits(source: Source, splits: TextSplit[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const split of splits) {
    let given = false;
    const context: SourceContext = {
      subtask: 0,
      parallelism: 1,
      push: (record) => void out.push(record),
      nextSplits: async () => (given ? [] : ((given = true), [split])),
      pause: async () => undefined,
      sleep: async () => undefined,
      wait: (promise) => promise,
      malformed: () => undefined,
      read: () => undefined,
      checkpointable: () => undefined,
      restored: [],
    };
    await sourceSpec(source).read(source, context);
  }
  return out;
}

// Quoted fields holding the delimiter, doubled quotes, \n and \r\n, an empty quoted field, Unicode.
const SMALL = [
  'id,text,n',
  '1,plain,10',
  '2,"a, b",20',
  '3,"say ""hi""",30',
  '4,"two\nlines",40',
  '5,"""",50',
  '6,"",60',
  '7,"crlf\r\ninside, and ""quotes""\nand more",70',
  '8,é中😀,80',
  '9,"ends with a quote""",90',
].join('\n') + '\n';

describe('CSV split boundaries', () => {
  test('a split boundary at every byte offset of a file with quoted delimiters, quotes and newlines cuts no record and reads none twice', async () => {
    const file = path.join(work.dir, 'small.csv');
    fs.writeFileSync(file, SMALL);
    const size = fs.statSync(file).size;
    const source: Source = { kind: 'csv', path: file, header: true, columns: { id: 'number', text: 'string', n: 'number' } };
    const whole = await readSplits(source, [{ file, start: 0, end: size }]);
    expect(whole).toHaveLength(9);
    expect(whole[3]).toEqual({ id: 4, text: 'two\nlines', n: 40 });
    expect(whole[4]).toEqual({ id: 5, text: '"', n: 50 });
    expect(whole[6]).toEqual({ id: 7, text: 'crlf\r\ninside, and "quotes"\nand more', n: 70 });
    const aligner = new QuoteParityAligner('"');
    for (let offset = 1; offset < size; offset++) {
      const cut = aligner.boundary(file, 0, offset, size);
      expect(cut, `offset ${offset}`).toBeGreaterThanOrEqual(offset);
      const read = await readSplits(source, [{ file, start: 0, end: cut }, { file, start: cut, end: size }]);
      expect(read, `a boundary asked at byte ${offset}, cut at ${cut}`).toEqual(whole);
    }
  });

  test('three splits with both boundaries anywhere read the file once, without a header too', async () => {
    const file = path.join(work.dir, 'small-noheader.csv');
    fs.writeFileSync(file, SMALL.slice(SMALL.indexOf('\n') + 1));
    const size = fs.statSync(file).size;
    const source: Source = { kind: 'csv', path: file };
    const whole = await readSplits(source, [{ file, start: 0, end: size }]);
    expect(whole[1]).toEqual(['2', 'a, b', '20']);
    const aligner = new QuoteParityAligner('"');
    const random = seededRandom(5);
    for (let i = 0; i < 300; i++) {
      const a = aligner.boundary(file, 0, 1 + Math.floor(random() * (size - 2)), size);
      const b = a >= size ? size : aligner.boundary(file, a, a + 1 + Math.floor(random() * (size - a)), size);
      expect(await readSplits(source, [{ file, start: 0, end: a }, { file, start: a, end: b }, { file, start: b, end: size }])).toEqual(whole);
    }
  });

  test('the JobManager cuts a 3 MB file at record boundaries for 3 tasks, with records spanning lines at every cut, its bytes counted once', async () => {
    const file = path.join(work.dir, 'big.csv');
    const soup = new Soup(100_000, 16);
    const random = seededRandom(9);
    const rows: string[][] = [];
    for (let i = 0; i < 12_000; i++) rows.push([String(i), soup.string(random, 100 + Math.floor(random() * 200)), random() < 0.5 ? 'a\n"b"\nc' : 'x']);
    const quoted = (field: string): string => `"${field.replace(/"/g, '""')}"`;
    fs.writeFileSync(file, 'id,text,more\n' + rows.map((r) => `${r[0]},${quoted(r[1])},${quoted(r[2])}`).join('\r\n') + '\r\n');
    const read = await readAll({ kind: 'csv', path: file, header: true }, 3);
    expect(read.perTask.every((records) => records.length > 0)).toBe(true);
    // Every byte of the file counted once as read, across the cuts.
    expect(read.bytes).toBe(fs.statSync(file).size);
    expect(byJson(read.records)).toEqual(byJson(rows.map(([id, text, more]) => ({ id, text, more }))));
  });
});

describe('CSV columns as a projection', () => {
  test('with columns, a record holds only the columns named, and the scanner keeps no column of the others', async () => {
    const file = path.join(work.dir, 'projected.csv');
    fs.writeFileSync(file, SMALL);
    const read = await readSplits({ kind: 'csv', path: file, header: true, columns: { n: 'number' } }, [{ file, start: 0, end: fs.statSync(file).size }]);
    expect(read).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90].map((n) => ({ n })));
    const records = new CsvRecords({ n: 'number' }, ['id', 'text', 'n'], '"');
    const batch = new CsvColumns();
    const data = Buffer.from(SMALL.slice(SMALL.indexOf('\n') + 1));
    batch.reset(data, isAscii(data));
    new CsvScanner(',', '"').scan(batch, 0, data.length, records.kinds);
    expect(batch.rows).toBe(9);
    expect([batch.columns[0], batch.columns[1], batch.columns[2]?.kind]).toEqual([undefined, undefined, 2]);
  });

  test('without a header, the columns named by index keep their positions, null at the others and past a short row', async () => {
    const file = path.join(work.dir, 'projected-arrays.csv');
    fs.writeFileSync(file, 'a,"x, y",1,true,tail\nb\n"c",,3,false\n');
    const read = await readSplits({ kind: 'csv', path: file, columns: { 0: 'string', 2: 'number', 3: 'boolean' } }, [{ file, start: 0, end: fs.statSync(file).size }]);
    expect(read).toEqual([
      ['a', null, 1, true],
      ['b', null, null, null],
      ['c', null, 3, false],
    ]);
  });

  test('a column named that the header lacks fails with SPW_ERR_MALFORMED_INPUT at line 1', async () => {
    const file = path.join(work.dir, 'no-such-column.csv');
    fs.writeFileSync(file, SMALL);
    const failure = await readAll({ kind: 'csv', path: file, header: true, columns: { id: 'number', price: 'number' } }, 1).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'SPW_ERR_MALFORMED_INPUT', line: 1 });
  });
});

describe('CSV', () => {
  test('records written then read back are the same: Unicode, empty strings, nulls of typed columns, large values, across 3 tasks', async () => {
    const soup = new Soup(300_000, 16);
    const random = seededRandom(21);
    const records = Array.from({ length: 6000 }, (_, i) => ({
      id: i,
      name: i % 50 === 0 ? '' : i % 997 === 0 ? soup.string(random, 120_000) : soup.string(random, Math.floor(random() * 60)),
      price: random() < 0.1 ? null : Math.round(random() * 1e6) / 100,
      ok: random() < 0.1 ? null : random() < 0.5,
      note: random() < 0.2 ? ' padded, "quoted" ' : 'x;y',
    }));
    const folder = path.join(work.dir, 'round');
    await writeAll({ kind: 'csv', path: folder, header: true }, [records.slice(0, 2000), records.slice(2000, 2100), records.slice(2100)]);
    expect(fs.readFileSync(path.join(folder, 'part-00001'), 'utf8').split('\n')[0]).toBe('id,name,price,ok,note');
    const read = await readAll({ kind: 'csv', path: folder, header: true, columns: { id: 'number', name: 'string', price: 'number', ok: 'boolean', note: 'string' } }, 3);
    expect(byJson(read.records)).toEqual(byJson(records));
  });

  test('array records with another delimiter, typed by index, read back as arrays; a gzip file reads whole', async () => {
    const records = Array.from({ length: 500 }, (_, i) => [String(i), i * 1.5, i % 3 === 0, `semi;colon "${i}"`]);
    const folder = path.join(work.dir, 'arrays');
    await writeAll({ kind: 'csv', path: folder, delimiter: ';' }, [records]);
    const file = path.join(folder, 'part-00000');
    fs.writeFileSync(`${file}.gz`, zlib.gzipSync(fs.readFileSync(file)));
    fs.rmSync(file);
    const read = await readAll({ kind: 'csv', path: folder, delimiter: ';', columns: { 0: 'string', 1: 'number', 2: 'boolean', 3: 'string' } }, 2);
    expect(read.records).toEqual(records);
  });

  test('an unterminated quote fails with SPW_ERR_MALFORMED_INPUT naming the line it opens on', async () => {
    const file = path.join(work.dir, 'open-quote.csv');
    const lines = Array.from({ length: 30_000 }, (_, i) => `${i},"text ${i}",x`);
    lines[25_000] = '25000,"never closed,x';
    fs.writeFileSync(file, lines.join('\n') + '\n');
    const failure = await readAll({ kind: 'csv', path: file }, 2).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'SPW_ERR_MALFORMED_INPUT', line: 25_001 });
    expect((failure as Error).message).toContain(`${file}:25001:`);
  });

  test("a field that does not convert fails naming its line; with onError 'skip' it is counted and skipped", async () => {
    const file = path.join(work.dir, 'bad-number.csv');
    const lines = ['id,price', ...Array.from({ length: 20_000 }, (_, i) => `${i},"${i}.5"`)];
    lines[15_001] = '15000,"multi\nline"';
    lines[17_001] = '17000,1,extra';
    fs.writeFileSync(file, lines.join('\n') + '\n');
    const source: Source = { kind: 'csv', path: file, header: true, columns: { id: 'number', price: 'number' } };
    const failure = await readAll(source, 2).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'SPW_ERR_MALFORMED_INPUT', line: 15_002 });
    const read = await readAll({ ...source, onError: 'skip' }, 2);
    expect(read.malformed).toBe(2);
    expect(read.records).toHaveLength(19_998);
  });
});

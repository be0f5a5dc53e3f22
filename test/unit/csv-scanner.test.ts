import fs from 'node:fs';
import path from 'node:path';
import { isAscii } from 'node:buffer';
import { afterAll, describe, expect, test } from 'vitest';
import { CsvColumns, NumberStatus } from '../../src/connectors/csv/CsvColumns.js';
import { CsvScanner } from '../../src/connectors/csv/CsvScanner.js';
import { FieldKind, type FieldKinds } from '../../src/connectors/csv/FieldKind.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { readAll } from '../helpers/connectors.js';
import { tempDir } from '../helpers/plane.js';
import type { Random } from '../helpers/records.js';

const work = tempDir('csv-scanner');
afterAll(() => work.remove());

/** A record as the reference reads it: its fields' texts and the line it starts on. */
interface ReferenceRecord {
  fields: string[];
  line: number;
}

/**
 * The reference: RFC 4180 read character by character, as simply as it can be said. A
 * record ends at LF or CRLF outside quotes; a field opened by a quote ends at a quote
 * not doubled, and may be followed by spaces; an empty line is no record.
 */
function referenceParse(text: string, delimiter: string, quote: string): ReferenceRecord[] {
  const records: ReferenceRecord[] = [];
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const startLine = line;
    const fields: string[] = [];
    for (;;) {
      let field = '';
      if (text[i] === quote) {
        i++;
        for (;;) {
          if (i >= text.length) throw new Error('unterminated');
          if (text[i] === quote && text[i + 1] === quote) {
            field += quote;
            i += 2;
          } else if (text[i] === quote) break;
          else {
            if (text[i] === '\n') line++;
            field += text[i++];
          }
        }
        i++;
        while (text[i] !== delimiter && (text[i] === ' ' || text[i] === '\t')) i++;
      } else {
        while (i < text.length && text[i] !== delimiter && text[i] !== '\n') field += text[i++];
        if (text[i] === '\n' && field.endsWith('\r')) field = field.slice(0, -1);
      }
      fields.push(field);
      if (i >= text.length) break;
      if (text[i] === delimiter) {
        i++;
        continue;
      }
      if (text[i] === '\r') i++;
      i++;
      line++;
      break;
    }
    if (!(fields.length === 1 && fields[0] === '')) records.push({ fields, line: startLine });
  }
  return records;
}

const DELIMITERS = [',', ';', '\t', '|'];
const PIECES = ['a', 'b', 'xyz', ' ', '"', '\n', '\r\n', '\r', 'é', '中', '😀', '0', '7'];
const NUMBERS = ['0', '-0', '42', '-17', '3.25', '-0.001', '.5', '5.', '+8', '1e3', '2.5E-4', '123456789012345678', '0.1234567890123456789', 'Infinity', '0x1f', ' 12 ', 'NaN', '', 'abc', '1.2.3', '-'];

function pick<T>(random: Random, values: readonly T[]): T {
  return values[Math.floor(random() * values.length)];
}

/** A field's text: pieces that need quoting (the delimiter, quotes, newlines) as often as not. */
function fieldText(random: Random, delimiter: string, numeric: boolean): string {
  if (numeric) return pick(random, NUMBERS);
  if (random() < 0.15) return '';
  let text = '';
  for (let n = Math.floor(random() * 6); n > 0; n--) text += random() < 0.15 ? delimiter : pick(random, PIECES);
  return text;
}

/** A field as written: quoted (quotes doubled) when it must be, or one time in five anyway. */
function encodeField(random: Random, text: string, delimiter: string): string {
  const must = text.includes(delimiter) || text.includes('"') || text.includes('\n') || text.includes('\r') || /^[ \t]|[ \t]$/.test(text);
  if (!must && random() >= 0.2) return text;
  return `"${text.replaceAll('"', '""')}"${random() < 0.1 ? ' ' : ''}`;
}

interface Generated {
  text: string;
  delimiter: string;
  /** Whether each column index holds numbers. */
  numeric: boolean[];
}

/** Records of 1 to 6 fields, each line ended by LF or CRLF (the last sometimes by nothing), empty lines among them. */
function generate(seed: number): Generated {
  const random = seededRandom(seed);
  const delimiter = pick(random, DELIMITERS);
  const width = 1 + Math.floor(random() * 6);
  const numeric = Array.from({ length: width }, () => random() < 0.4);
  const lines: string[] = [];
  for (let r = Math.floor(random() * 40); r > 0; r--) {
    if (random() < 0.05) {
      lines.push('');
      continue;
    }
    // Now and then a row of another width, as files without a header may have.
    const fields = random() < 0.1 ? 1 + Math.floor(random() * (width + 2)) : width;
    const texts = Array.from({ length: fields }, (_, i) => fieldText(random, delimiter, numeric[i] ?? false));
    // A lone empty field is an empty line, no record: give it quotes' worth of text.
    if (fields === 1 && texts[0] === '') texts[0] = 'z';
    lines.push(texts.map((t) => encodeField(random, t, delimiter)).join(delimiter));
  }
  let text = '';
  for (const [index, line] of lines.entries()) text += line + (index === lines.length - 1 && random() < 0.3 ? '' : random() < 0.5 ? '\r\n' : '\n');
  return { text, delimiter, numeric };
}

function scan(data: Buffer, start: number, end: number, delimiter: string, kinds: FieldKinds): CsvColumns {
  const batch = new CsvColumns();
  batch.reset(data, isAscii(data.subarray(start, end)));
  new CsvScanner(delimiter, '"').scan(batch, start, end, kinds);
  return batch;
}

/** Row `row` of the batch as the reference would give the fields kept (skipped ones as null), numbers as `Number()` reads them. */
function rowOf(batch: CsvColumns, row: number, kinds: FieldKinds): unknown[] {
  const fields: unknown[] = [];
  for (let i = 0; i < batch.fieldCounts[row]; i++) {
    const kind = i < kinds.byIndex.length ? kinds.byIndex[i] : kinds.rest;
    if (kind === FieldKind.Skip) fields.push(null);
    else if (kind === FieldKind.Text) fields.push(batch.text(i, row, '"'));
    else {
      const column = batch.columns[i];
      const status = column?.status?.[row];
      fields.push(status === NumberStatus.Number ? column?.values?.[row] : status === NumberStatus.Null ? 'null' : 'not a number');
    }
  }
  return fields;
}

function expectedOf(record: ReferenceRecord, kinds: FieldKinds): unknown[] {
  return record.fields.map((text, i) => {
    const kind = i < kinds.byIndex.length ? kinds.byIndex[i] : kinds.rest;
    if (kind === FieldKind.Skip) return null;
    if (kind === FieldKind.Text) return text;
    if (text === '') return 'null';
    const value = Number(text);
    return Number.isNaN(value) && text.trim() !== 'NaN' ? 'not a number' : value;
  });
}

describe('CSV scanner', () => {
  test('2,000 generated files read as the reference parser reads them: quotes, doubled quotes, newlines in fields, CRLF, four delimiters, empty fields, numbers and skipped fields', () => {
    for (let seed = 1; seed <= 2000; seed++) {
      const { text, delimiter, numeric } = generate(seed);
      const random = seededRandom(seed * 7919);
      const kinds: FieldKinds = { byIndex: numeric.map((n) => (n ? FieldKind.Number : random() < 0.3 ? FieldKind.Skip : FieldKind.Text)), rest: random() < 0.5 ? FieldKind.Text : FieldKind.Skip };
      const reference = referenceParse(text, delimiter, '"');
      const data = Buffer.from(text);
      const batch = scan(data, 0, data.length, delimiter, kinds);
      expect(batch.error, `seed ${seed}: ${JSON.stringify(text)}`).toBeUndefined();
      expect(batch.end, `seed ${seed}`).toBe(data.length);
      const rows = Array.from({ length: batch.rows }, (_, r) => rowOf(batch, r, kinds));
      expect(rows, `seed ${seed}: ${JSON.stringify(text)}`).toEqual(reference.map((r) => expectedOf(r, kinds)));
    }
  });

  test('a file scanned in two runs cut at any record boundary gives the records of one run, none lost or read twice', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const { text, delimiter } = generate(seed);
      const data = Buffer.from(text);
      const kinds: FieldKinds = { byIndex: [], rest: FieldKind.Text };
      const whole = scan(data, 0, data.length, delimiter, kinds);
      const rows = Array.from({ length: whole.rows }, (_, r) => rowOf(whole, r, kinds));
      // Every record start is a boundary, and so is the end.
      for (const cut of [...Array.from(whole.recordStarts.subarray(0, whole.rows)), data.length]) {
        const first = scan(data, 0, cut, delimiter, kinds);
        const second = scan(data, cut, data.length, delimiter, kinds);
        const both = [...Array.from({ length: first.rows }, (_, r) => rowOf(first, r, kinds)), ...Array.from({ length: second.rows }, (_, r) => rowOf(second, r, kinds))];
        expect(both, `seed ${seed}, cut at ${cut}`).toEqual(rows);
      }
    }
  });

  test('a scan of at most n records stops after the nth, and the next scan goes on from there', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const { text, delimiter } = generate(seed);
      const data = Buffer.from(text);
      const kinds: FieldKinds = { byIndex: [], rest: FieldKind.Text };
      const reference = referenceParse(text, delimiter, '"');
      const batch = new CsvColumns();
      batch.reset(data, isAscii(data));
      const scanner = new CsvScanner(delimiter, '"');
      const read: unknown[] = [];
      for (let at = 0; at < data.length; ) {
        scanner.scan(batch, at, data.length, kinds, batch.rows + 1);
        expect(batch.error, `seed ${seed}`).toBeUndefined();
        at = batch.end;
      }
      for (let r = 0; r < batch.rows; r++) read.push(rowOf(batch, r, kinds));
      expect(read, `seed ${seed}`).toEqual(reference.map((r) => r.fields));
    }
  });

  test('a quoted field followed by text, or never closed, stops the scan at the start of its record', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const { text, delimiter } = generate(seed);
      const reference = referenceParse(text, delimiter, '"');
      if (reference.length === 0) continue;
      const random = seededRandom(seed);
      // A quote never closed can only be the last record (a later quote would close it); text after a quote, any record.
      const closed = random() < 0.5;
      const bad = closed ? Math.floor(random() * reference.length) : reference.length;
      const lines = text.split('\n');
      const line = closed ? reference[bad].line : lines.length;
      if (closed) lines.splice(line - 1, 0, `ok${delimiter}"quoted"x${delimiter}z`);
      else lines[lines.length - 1] += `${lines[lines.length - 1] === '' || text.endsWith('\r\n') || text.endsWith('\n') ? '' : '\n'}ok${delimiter}"open`;
      const data = Buffer.from(lines.join('\n'));
      const batch = scan(data, 0, data.length, delimiter, { byIndex: [], rest: FieldKind.Text });
      expect(batch.error, `seed ${seed}`).toBeDefined();
      const found = data.subarray(0, batch.error?.recordStart).toString().split('\n').length;
      expect(found, `seed ${seed}`).toBe(closed ? line : data.toString().split('\n').length);
      expect(batch.rows, `seed ${seed}`).toBe(bad);
    }
  });
});

describe('CSV source on generated files', () => {
  test('records read across 3 tasks are the reference parser records, typed columns included', async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const random = seededRandom(seed);
      const width = 4;
      const lines = ['id,text,n,flag'];
      const expected: Record<string, unknown>[] = [];
      for (let r = 0; r < 2000; r++) {
        const text = fieldText(random, ',', false);
        const n = pick(random, ['1', '-2.5', '', '1e3', '0.1']);
        const flag = pick(random, ['true', 'FALSE', '1', '0', '']);
        lines.push([String(r), encodeField(random, text, ','), n, flag].join(','));
        expected.push({ id: r, text, n: n === '' ? null : Number(n), flag: flag === '' ? null : flag === 'true' || flag === '1' });
      }
      expect(lines[0].split(',')).toHaveLength(width);
      const file = path.join(work.dir, `gen-${seed}.csv`);
      fs.writeFileSync(file, lines.join(random() < 0.5 ? '\r\n' : '\n') + '\n');
      const read = await readAll({ kind: 'csv', path: file, header: true, columns: { id: 'number', text: 'string', n: 'number', flag: 'boolean' } }, 3);
      const sorted = (read.records as { id: number }[]).slice().sort((a, b) => a.id - b.id);
      expect(sorted, `seed ${seed}`).toEqual(expected);
    }
  });

  test('a quoted field followed by text fails the job with SPW_ERR_MALFORMED_INPUT naming its line, past multi-line records', async () => {
    const file = path.join(work.dir, 'text-after-quote.csv');
    const lines = Array.from({ length: 20_000 }, (_, i) => `${i},"two\nlines ${i}",x`);
    lines[12_345] = '12345,"closed"then text,x';
    fs.writeFileSync(file, lines.join('\n') + '\n');
    const failure = await readAll({ kind: 'csv', path: file }, 2).catch((error: unknown) => error);
    // Every record before it spans two lines.
    expect(failure).toMatchObject({ code: 'SPW_ERR_MALFORMED_INPUT', line: 12_345 * 2 + 1 });
  });
});

/**
 * `npm run bench -- --only csv [--quick]`: Spillway's CSV scanner beside papaparse and the
 * fastest maintained npm parsers (udsv, d3-dsv, csv-simple-parser) and DuckDB's read_csv,
 * on the same generated file (deterministic: numbers, quoted strings with delimiters,
 * doubled quotes and newlines), 250 MB (quick: 10 MB), in the same run.
 *
 * - Parsers, one thread each, from bytes in memory (cut at records, about a megabyte at a
 *   time, as the source reads them): a JavaScript parser's time includes decoding the
 *   bytes to a string (it takes nothing else; the decode alone is a row of its own). Each
 *   counts the rows and sums the integer column `n`, checked exactly against the
 *   generator's. DuckDB counts and sums the same file with 1 thread and with 2.
 * - End to end: `WHERE x > c GROUP BY a, b` with COUNT(*), SUM(n) and SUM(d) through
 *   readCsv's job (bench/jobs/csv-group.mjs) on 2 TaskManagers of 2 slots, beside DuckDB
 *   (2 threads) running the same query on the same file; results checked against the
 *   generator's (counts and integer sums exactly, double sums within 1e-9).
 *
 * Every figure is the better of two runs after a warm-up, in turns with its baselines.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import csvSimpleParser from 'csv-simple-parser';
import { csvParseRows } from 'd3-dsv';
import Papa from 'papaparse';
import { initParser, type Schema } from 'udsv';
import { CsvColumns } from '../../src/connectors/csv/CsvColumns.js';
import { CsvRecords } from '../../src/connectors/csv/CsvRecords.js';
import { CsvScanner } from '../../src/connectors/csv/CsvScanner.js';
import { readRecordChunks } from '../../src/connectors/csv/CsvSplits.js';
import { FieldKind, type FieldKinds } from '../../src/connectors/csv/FieldKind.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { withCluster } from '../cluster.js';
import { formatCount } from '../measure.js';
import { packageRoot } from '../results.js';
import type { BenchSection } from './Section.js';

const HEADER = 'a,b,x,n,d,s';
const CATEGORIES = ['books', 'music', 'games', 'garden', 'tools', 'toys', 'food', 'sport', 'home', 'auto', 'baby', 'beauty', 'health', 'office', 'pets', 'shoes'];
/** The filter's constant: about half the rows pass. */
const THRESHOLD = 500;
const RUNS = 2;
const N_INDEX = 3;

interface Group {
  count: number;
  sumN: number;
  sumD: number;
}

interface Generated {
  file: string;
  bytes: number;
  rows: number;
  sumN: number;
  groups: Map<string, Group>;
}

/** A quoted text one time in four: a comma, a doubled quote, sometimes a newline. */
function text(random: () => number): string {
  const word = Math.floor(random() * 1e9).toString(36);
  const r = random();
  if (r < 0.15) return `"${word}, ""quoted"" ${word}"`;
  if (r < 0.25) return `"${word}\n${word}"`;
  return `${word} ${word}`;
}

/** Writes about `bytes` of `a,b,x,n,d,s` rows with a header; the rows, the sum of n and the query's groups. */
function generate(file: string, bytes: number): Generated {
  const random = seededRandom(40);
  const fd = fs.openSync(file, 'w');
  const groups = new Map<string, Group>();
  let written = fs.writeSync(fd, `${HEADER}\n`);
  let rows = 0;
  let sumN = 0;
  try {
    while (written < bytes) {
      const lines: string[] = [];
      for (let i = 0; i < 10_000; i++) {
        const u = random();
        const a = CATEGORIES[Math.floor(u * u * CATEGORIES.length)];
        const b = Math.floor(random() * 10);
        const x = Math.floor(random() * 1000);
        const n = Math.floor(random() * 1_000_000);
        const d = Math.round(random() * 1e6) / 100;
        lines.push(`${a},${b},${x},${n},${d},${text(random)}\n`);
        rows++;
        sumN += n;
        if (x > THRESHOLD) {
          const key = `${a}\u0000${b}`;
          const group = groups.get(key) ?? { count: 0, sumN: 0, sumD: 0 };
          group.count++;
          group.sumN += n;
          group.sumD += d;
          groups.set(key, group);
        }
      }
      written += fs.writeSync(fd, lines.join(''));
    }
  } finally {
    fs.closeSync(fd);
  }
  return { file, bytes: written, rows, sumN, groups };
}

/** The file's records as the source reads them (chunks of whole records), the header cut off the first. */
async function chunksOf(file: string): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  await readRecordChunks({ file, start: 0, end: fs.statSync(file).size }, '"', () => undefined, (chunk) => {
    const data = Buffer.from(chunk.data.subarray(chunk.start, chunk.end));
    chunks.push(chunk.first ? data.subarray(data.indexOf(0x0a) + 1) : data);
  });
  return chunks;
}

/** What a parser gives for the rows of the chunks: how many, and the sum of column n. */
interface Tally {
  rows: number;
  sumN: number;
}

type Parser = (chunks: Buffer[]) => Tally;

function tallyRows(rows: ArrayLike<ArrayLike<unknown>>, tally: Tally): void {
  for (let r = 0; r < rows.length; r++) {
    tally.sumN += Number(rows[r][N_INDEX]);
    tally.rows++;
  }
}

/**
 * A parser of strings, given each chunk decoded; `lastNewline: false` leaves out the chunk's
 * final newline for a parser that would make an empty row of it (papaparse, csv-simple-parser).
 */
const stringParser =
  (parse: (text: string) => ArrayLike<ArrayLike<unknown>>, lastNewline = true): Parser =>
  (chunks) => {
    const tally = { rows: 0, sumN: 0 };
    for (const chunk of chunks) tallyRows(parse(chunk.toString('utf8', 0, lastNewline ? chunk.length : chunk.length - 1)), tally);
    return tally;
  };

const UDSV_SCHEMA: Schema = {
  col: ',',
  row: '\n',
  encl: '"',
  esc: '"',
  trim: false,
  cols: HEADER.split(',').map((name) => ({ name, type: 's', repl: { empty: '', null: 'null', NaN: 'NaN' } })),
};

const UDSV = initParser(UDSV_SCHEMA);

/** Ours: the scanner into columns, n parsed from its bytes, the other fields kept as byte ranges. */
function ours(kinds: FieldKinds): Parser {
  const scanner = new CsvScanner(',', '"');
  const batch = new CsvColumns();
  return (chunks) => {
    const tally = { rows: 0, sumN: 0 };
    for (const chunk of chunks) {
      batch.reset(chunk, true);
      scanner.scan(batch, 0, chunk.length, kinds);
      const values = batch.columns[N_INDEX]?.values as Float64Array;
      for (let r = 0; r < batch.rows; r++) tally.sumN += values[r];
      tally.rows += batch.rows;
    }
    return tally;
  };
}

/** Ours, every field made a value as the source's records are (an object a row by the header's names). */
function oursRecords(): Parser {
  const scanner = new CsvScanner(',', '"');
  const batch = new CsvColumns();
  const records = new CsvRecords({ b: 'number', x: 'number', n: 'number', d: 'number' }, HEADER.split(','), '"');
  return (chunks) => {
    const tally = { rows: 0, sumN: 0 };
    for (const chunk of chunks) {
      batch.reset(chunk, true);
      scanner.scan(batch, 0, chunk.length, records.kinds);
      for (let r = 0; r < batch.rows; r++) tally.sumN += (records.record(batch, r) as { n: number }).n;
      tally.rows += batch.rows;
    }
    return tally;
  };
}

const PARSERS: { name: string; parse: Parser }[] = [
  { name: 'Spillway CsvScanner (n parsed from bytes, other fields byte ranges)', parse: ours({ byIndex: [FieldKind.Text, FieldKind.Text, FieldKind.Text, FieldKind.Number], rest: FieldKind.Text }) },
  { name: 'Spillway CsvScanner, fields not read skipped (only n kept)', parse: ours({ byIndex: [FieldKind.Skip, FieldKind.Skip, FieldKind.Skip, FieldKind.Number], rest: FieldKind.Skip }) },
  { name: 'Spillway CsvScanner + CsvRecords (an object a row, every field a value)', parse: oursRecords() },
  { name: 'papaparse', parse: stringParser((text) => Papa.parse<string[]>(text, { delimiter: ',', newline: '\n' }).data, false) },
  { name: 'udsv (stringArrs)', parse: stringParser((text) => UDSV.stringArrs(text)) },
  { name: 'd3-dsv (csvParseRows)', parse: stringParser((text) => csvParseRows(text)) },
  { name: 'csv-simple-parser', parse: stringParser((text) => csvSimpleParser(text) as unknown[][], false) },
];

/** The decoding every JavaScript parser above pays first, alone: what it leaves them. */
function decodeOnly(chunks: Buffer[]): number {
  let characters = 0;
  for (const chunk of chunks) characters += chunk.toString('utf8').length;
  return characters;
}

interface Timed {
  seconds: number;
  mbPerSec: number;
}

function timed(bytes: number, run: () => void): Timed {
  const started = performance.now();
  run();
  const seconds = (performance.now() - started) / 1000;
  return { seconds, mbPerSec: bytes / seconds / 1e6 };
}

async function timedAsync<T>(bytes: number, run: () => Promise<T>): Promise<Timed & { value: T }> {
  const started = performance.now();
  const value = await run();
  const seconds = (performance.now() - started) / 1000;
  return { seconds, mbPerSec: bytes / seconds / 1e6, value };
}

const better = <T extends Timed>(a: T | undefined, b: T): T => (a === undefined || b.seconds < a.seconds ? b : a);

const DUCK_COLUMNS = "columns = {'a': 'VARCHAR', 'b': 'BIGINT', 'x': 'BIGINT', 'n': 'BIGINT', 'd': 'DOUBLE', 's': 'VARCHAR'}";

async function duckTally(connection: DuckDBConnection, file: string): Promise<Tally> {
  const rows = (await connection.runAndReadAll(`SELECT count(*)::DOUBLE, sum(n)::DOUBLE FROM read_csv('${file}', header = true, ${DUCK_COLUMNS})`)).getRows();
  return { rows: Number(rows[0][0]), sumN: Number(rows[0][1]) };
}

async function duckGroups(connection: DuckDBConnection, file: string): Promise<Map<string, Group>> {
  const rows = (
    await connection.runAndReadAll(`SELECT a, b, count(*)::DOUBLE, sum(n)::DOUBLE, sum(d) FROM read_csv('${file}', header = true, ${DUCK_COLUMNS}) WHERE x > ${THRESHOLD} GROUP BY a, b`)
  ).getRows();
  return new Map(rows.map(([a, b, count, sumN, sumD]) => [`${String(a)}\u0000${Number(b)}`, { count: Number(count), sumN: Number(sumN), sumD: Number(sumD) }]));
}

function sameGroups(got: Map<string, Group>, expected: Map<string, Group>): boolean {
  if (got.size !== expected.size) return false;
  for (const [key, want] of expected) {
    const have = got.get(key);
    if (have === undefined || have.count !== want.count || have.sumN !== want.sumN || Math.abs(have.sumD - want.sumD) > 1e-9 * Math.abs(want.sumD)) return false;
  }
  return true;
}

const rate = (t: Timed): string => `${t.mbPerSec.toFixed(1)} MB/s (${t.seconds.toFixed(2)} s)`;

export const CSV_PARSERS: BenchSection = {
  name: 'csv',
  about: "the CSV scanner beside papaparse, udsv, d3-dsv, csv-simple-parser and DuckDB's read_csv (MB/s, same file, same run), and readCsv's filter-and-group job beside DuckDB's GROUP BY",
  async run(quick) {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-bench-csv-'));
    const duck = await DuckDBInstance.create(':memory:', { threads: '2' });
    const connection = await duck.connect();
    try {
      const target = quick ? 10e6 : 250e6;
      console.error(`bench: csv: generating ${target / 1e6} MB of CSV in ${work}`);
      const data = generate(path.join(work, 'rows.csv'), target);
      const chunks = await chunksOf(data.file);
      const exact = (tally: Tally): boolean => tally.rows === data.rows && tally.sumN === data.sumN;

      // Parsers, each warmed on a chunk, then in turns with DuckDB, RUNS times.
      const parsed = new Map<string, Timed & { exact: boolean }>();
      const duckRuns: { threads: number; best?: Timed & { exact: boolean } }[] = [{ threads: 1 }, { threads: 2 }];
      let decoding: Timed | undefined;
      for (const { parse } of PARSERS) parse(chunks.slice(0, 2));
      for (let run = 0; run < RUNS; run++) {
        for (const { name, parse } of PARSERS) {
          console.error(`bench: csv: ${name}`);
          let tally: Tally = { rows: 0, sumN: 0 };
          const t = timed(data.bytes, () => (tally = parse(chunks)));
          parsed.set(name, better(parsed.get(name), { ...t, exact: exact(tally) }));
        }
        decoding = better(decoding, timed(data.bytes, () => decodeOnly(chunks)));
        for (const duckRun of duckRuns) {
          await connection.run(`SET threads = ${duckRun.threads}`);
          const t = await timedAsync(data.bytes, () => duckTally(connection, data.file));
          duckRun.best = better(duckRun.best, { ...t, exact: exact(t.value) });
        }
      }
      await connection.run('SET threads = 2');

      console.error('bench: csv: the filter-and-group job on 2 TaskManagers of 2 slots, in turns with DuckDB (2 threads)');
      const endToEnd = await withCluster({ taskManagers: 2, slots: 2 }, async (cluster) => {
        const module = await cluster.upload(fs.readFileSync(path.join(packageRoot(), 'bench', 'jobs', 'csv-group.mjs'), 'utf8'));
        const job = async (): Promise<Timed & { exact: boolean }> => {
          const status = await cluster.run({ module, params: { input: data.file, threshold: THRESHOLD }, parallelism: 4 });
          const records = await cluster.result<[string, [number, number, number]]>(status.id);
          const groups = new Map(records.map(([key, [count, sumN, sumD]]) => [key, { count, sumN, sumD }]));
          return { seconds: status.seconds, mbPerSec: data.bytes / status.seconds / 1e6, exact: sameGroups(groups, data.groups) };
        };
        await job();
        let ours: (Timed & { exact: boolean }) | undefined;
        let duckdb: (Timed & { exact: boolean }) | undefined;
        for (let run = 0; run < RUNS; run++) {
          ours = better(ours, await job());
          const t = await timedAsync(data.bytes, () => duckGroups(connection, data.file));
          duckdb = better(duckdb, { ...t, exact: sameGroups(t.value, data.groups) });
        }
        return { ours: ours!, duckdb: duckdb! };
      });

      const duck2 = duckRuns[1].best!;
      const lines = [
        `\nCSV, ${(data.bytes / 1e6).toFixed(0)} MB, ${formatCount(data.rows)} rows (${HEADER}; a quarter of s quoted, with commas, doubled quotes or newlines), count rows and sum n, one thread`,
        '| parser | MB/s | against DuckDB (1 thread) | against DuckDB (2 threads) | exact |',
        '| --- | --- | --- | --- | --- |',
      ];
      const duck1 = duckRuns[0].best!;
      for (const { name } of PARSERS) {
        const t = parsed.get(name)!;
        lines.push(`| ${name} | ${rate(t)} | ${(t.mbPerSec / duck1.mbPerSec).toFixed(2)}x | ${(t.mbPerSec / duck2.mbPerSec).toFixed(2)}x | ${t.exact ? 'yes' : 'NO'} |`);
      }
      lines.push(`| decoding the bytes to a string alone, as each JavaScript parser must first | ${rate(decoding!)} | | | |`);
      for (const duckRun of duckRuns) {
        const t = duckRun.best!;
        lines.push(`| DuckDB read_csv, ${duckRun.threads} thread${duckRun.threads > 1 ? 's' : ''} (from the file) | ${rate(t)} | ${(t.mbPerSec / duck1.mbPerSec).toFixed(2)}x | ${(t.mbPerSec / duck2.mbPerSec).toFixed(2)}x | ${t.exact ? 'yes' : 'NO'} |`);
      }
      lines.push(
        '',
        `End to end, WHERE x > ${THRESHOLD} GROUP BY a, b, COUNT(*), SUM(n), SUM(d), the same file`,
        '| figure | measured | DuckDB (2 threads), same run | ratio |',
        '| --- | --- | --- | --- |',
        `| readCsv job, 2 TaskManagers of 2 slots, parallelism 4 (as a user sees it: POST to FINISHED)${endToEnd.ours.exact ? ', exact' : ', NOT EXACT'} | ${rate(endToEnd.ours)} | ${rate(endToEnd.duckdb)}${endToEnd.duckdb.exact ? '' : ' (NOT EXACT)'} | ${(endToEnd.ours.mbPerSec / endToEnd.duckdb.mbPerSec).toFixed(2)}x |`,
      );
      console.log(lines.join('\n'));
      return {
        bytes: data.bytes,
        rows: data.rows,
        parsers: Object.fromEntries(parsed),
        decoding,
        duckdb: Object.fromEntries(duckRuns.map((d) => [`${d.threads} threads`, d.best])),
        endToEnd,
      };
    } finally {
      connection.closeSync();
      duck.closeSync();
      fs.rmSync(work, { recursive: true, force: true });
    }
  },
};

/**
 * `npm run bench -- --only connectors [--quick]`: the file formats' read throughput on
 * generated data (deterministic, in a temporary folder removed after).
 *
 * - JSON Lines, 1 GB (quick: 100 MB) in 8 files, parsed and counted by a field on a
 *   local cluster of 2 TaskManagers of 1 slot (parallelism 2), beside a plain
 *   single-process JSON.parse loop over the same files: records/s and MB/s, the ratio,
 *   PASS/FAIL against 1.5x. Beside it the machine's ceiling: the engine's reader bare in
 *   2 warm worker threads against 1, no engine.
 * - CSV and Parquet (the same records; the Parquet files written by DuckDB from the
 *   CSV), counted by the same column on the same cluster, beside DuckDB (2 threads)
 *   counting it over the same files: MB/s, records/s, the ratio.
 *
 * Every measurement runs in turns with its baselines, twice, after warm-ups (a shared
 * machine's load changes by the minute), and the better of the two is kept; a job is timed
 * as a user sees it (from POST /jobs until a poll every 50 ms sees FINISHED), its counts
 * checked exactly.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { seededRandom } from '../../src/job/Corpus.js';
import { withCluster, type BenchCluster } from '../cluster.js';
import { BareJsonThreads } from '../jsonThreads.js';
import { formatCount } from '../measure.js';
import { packageRoot } from '../results.js';
import type { BenchSection } from './Section.js';

const CATEGORIES = ['books', 'music', 'games', 'garden', 'tools', 'toys', 'food', 'sport', 'home', 'auto', 'baby', 'beauty', 'health', 'office', 'pets', 'shoes'];
const FIELD = 'category';
const JSON_FILES = 8;
const TABLE_FILES = 4;
const TARGET = 1.5;
const RUNS = 2;

interface Dataset {
  files: string[];
  bytes: number;
  records: number;
  counts: Map<string, number>;
}

interface Rate {
  seconds: number;
  mbPerSec: number;
  recordsPerSec: number;
}

function rate(bytes: number, records: number, seconds: number): Rate {
  return { seconds, mbPerSec: bytes / seconds / 1e6, recordsPerSec: records / seconds };
}

/** Records of about 100 bytes, a category of 16 drawn unevenly; a name quoted in CSV one time in four (a comma and a quote in it). */
function* generateRecords(seed: number): Generator<{ id: number; category: string; price: number; name: string; ok: boolean; qty: number }> {
  const random = seededRandom(seed);
  for (let id = 0; ; id++) {
    const r = random();
    const category = CATEGORIES[Math.floor(r * r * CATEGORIES.length)];
    const name = random() < 0.25 ? `item ${Math.floor(random() * 1e6).toString(36)}, "special"` : `item ${Math.floor(random() * 1e6).toString(36)}`;
    yield { id, category, price: Math.round(random() * 100_000) / 100, name, ok: random() < 0.5, qty: Math.floor(random() * 1000) };
  }
}

/** Writes `bytes` of records into `files` files, formatted by `line`; the exact counts by category. */
function writeDataset(dir: string, extension: string, bytes: number, files: number, header: string, line: (r: ReturnType<typeof generateRecords> extends Generator<infer R> ? R : never) => string): Dataset {
  fs.mkdirSync(dir, { recursive: true });
  const records = generateRecords(42);
  const counts = new Map<string, number>();
  const names: string[] = [];
  let total = 0;
  let count = 0;
  for (let f = 0; f < files; f++) {
    const file = path.join(dir, `part-${f}${extension}`);
    names.push(file);
    const fd = fs.openSync(file, 'w');
    let written = 0;
    let batch: string[] = header === '' ? [] : [header];
    let batchBytes = 0;
    while (written + batchBytes < bytes / files) {
      const record = records.next().value!;
      const text = line(record);
      batch.push(text);
      batchBytes += text.length;
      counts.set(record.category, (counts.get(record.category) ?? 0) + 1);
      count++;
      if (batchBytes >= 4 << 20) {
        written += fs.writeSync(fd, batch.join(''));
        batch = [];
        batchBytes = 0;
      }
    }
    written += fs.writeSync(fd, batch.join(''));
    fs.closeSync(fd);
    total += written;
  }
  return { files: names, bytes: total, records: count, counts };
}

const csvField = (text: string): string => (/[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

/** The plain single-process loop a user would write: read a megabyte at a time, cut lines, JSON.parse each, count by the field in a Map. */
function plainJsonCount(dataset: Dataset): { rate: Rate; counts: Map<unknown, number> } {
  const started = performance.now();
  const counts = new Map<unknown, number>();
  let records = 0;
  const buffer = Buffer.allocUnsafe(1 << 20);
  for (const file of dataset.files) {
    const fd = fs.openSync(file, 'r');
    let tail = '';
    for (let position = 0; ; ) {
      const read = fs.readSync(fd, buffer, 0, buffer.length, position);
      if (read === 0) break;
      position += read;
      const text = tail + buffer.toString('utf8', 0, read);
      let from = 0;
      for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n', from)) {
        const key = (JSON.parse(text.slice(from, newline)) as Record<string, unknown>)[FIELD];
        counts.set(key, (counts.get(key) ?? 0) + 1);
        records++;
        from = newline + 1;
      }
      tail = text.slice(from);
    }
    fs.closeSync(fd);
  }
  return { rate: rate(dataset.bytes, records, (performance.now() - started) / 1000), counts };
}

function exact(counts: Iterable<[unknown, number]>, expected: Map<string, number>): boolean {
  const got = new Map(counts);
  return got.size === expected.size && [...expected].every(([key, n]) => got.get(key) === n);
}

interface EngineRun {
  rate: Rate;
  /** The JobManager's time, from the job's start to its end. */
  engineSeconds: number;
  exact: boolean;
}

async function runCount(cluster: BenchCluster, module: string, format: string, input: string, dataset: Dataset): Promise<EngineRun> {
  const status = await cluster.run({ module, params: { format, input, field: FIELD }, parallelism: 2 });
  const counts = await cluster.result<[string, number]>(status.id);
  const engineSeconds = ((status.ended ?? Number.NaN) - (status.started ?? Number.NaN)) / 1000;
  return { rate: rate(dataset.bytes, dataset.records, status.seconds), engineSeconds, exact: exact(counts, dataset.counts) };
}

async function duckCount(connection: DuckDBConnection, from: string, dataset: Dataset): Promise<{ rate: Rate; exact: boolean }> {
  const started = performance.now();
  const reader = await connection.runAndReadAll(`SELECT ${FIELD}, count(*)::INTEGER FROM ${from} GROUP BY ${FIELD}`);
  const seconds = (performance.now() - started) / 1000;
  const counts = reader.getRows().map(([key, n]) => [String(key), Number(n)] as [string, number]);
  return { rate: rate(dataset.bytes, dataset.records, seconds), exact: exact(counts, dataset.counts) };
}

function row(cells: (string | number)[]): string {
  return `| ${cells.join(' | ')} |`;
}

const mb = (r: Rate): string => `${r.mbPerSec.toFixed(1)} MB/s, ${formatCount(r.recordsPerSec)} records/s (${r.seconds.toFixed(2)} s)`;

export const CONNECTORS: BenchSection = {
  name: 'connectors',
  about: 'JSON Lines, CSV and Parquet read on 2 TaskManagers, beside a plain JSON.parse loop and DuckDB',
  async run(quick) {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-bench-connectors-'));
    const threads = new BareJsonThreads(2);
    const duck = await DuckDBInstance.create(':memory:', { threads: '2' });
    const connection = await duck.connect();
    try {
      const jsonBytes = quick ? 100e6 : 1e9;
      const tableBytes = quick ? 25e6 : 250e6;
      console.error(`bench: connectors: generating ${jsonBytes / 1e6} MB of JSON Lines and ${tableBytes / 1e6} MB of CSV in ${work}`);
      const json = writeDataset(path.join(work, 'json'), '.jsonl', jsonBytes, JSON_FILES, '', (r) => JSON.stringify(r) + '\n');
      const csv = writeDataset(path.join(work, 'csv'), '.csv', tableBytes, TABLE_FILES, 'id,category,price,name,ok,qty\n', (r) =>
        `${r.id},${r.category},${r.price},${csvField(r.name)},${r.ok},${r.qty}\n`,
      );
      const parquetDir = path.join(work, 'parquet');
      fs.mkdirSync(parquetDir);
      for (const [i, file] of csv.files.entries()) {
        await connection.run(`COPY (SELECT * FROM read_csv('${file}', header = true)) TO '${path.join(parquetDir, `part-${i}.parquet`)}' (FORMAT parquet)`);
      }
      const parquetFiles = fs.readdirSync(parquetDir).map((name) => path.join(parquetDir, name));
      const parquet: Dataset = { ...csv, files: parquetFiles, bytes: parquetFiles.reduce((sum, file) => sum + fs.statSync(file).size, 0) };

      console.error('bench: connectors: on the cluster (2 TaskManagers of 1 slot), in turns with the plain loop, the bare threads and DuckDB');
      const results = await withCluster({ taskManagers: 2, slots: 1 }, async (cluster) => {
        const module = await cluster.upload(fs.readFileSync(path.join(packageRoot(), 'bench', 'jobs', 'count-by-field.mjs'), 'utf8'));
        // Warm-ups: the task threads, the readers' code and the page cache.
        for (const [format, input] of [['jsonLines', json.files[0]], ['csv', csv.files[0]], ['parquet', parquet.files[0]]] as const) {
          await cluster.run({ module, params: { format, input, field: FIELD }, parallelism: 2 });
        }
        await threads.measure(json.files.slice(0, 1), FIELD, 2);
        // Each figure in turn with its baselines, RUNS times (a shared machine's load changes by the minute); the best of each.
        const best = <T extends { rate: Rate }>(runs: T[]): T => runs.reduce((a, b) => (b.rate.seconds < a.rate.seconds ? b : a));
        const bare = async (n: number): Promise<{ rate: Rate }> => {
          const run = await threads.measure(json.files, FIELD, n);
          return { rate: rate(json.bytes, run.records, run.seconds) };
        };
        const runs = { plain: [] as ReturnType<typeof plainJsonCount>[], one: [] as { rate: Rate }[], two: [] as { rate: Rate }[], jsonRun: [] as EngineRun[] };
        for (let i = 0; i < RUNS; i++) {
          runs.plain.push(plainJsonCount(json));
          runs.one.push(await bare(1));
          runs.two.push(await bare(2));
          runs.jsonRun.push(await runCount(cluster, module, 'jsonLines', path.join(work, 'json'), json));
        }
        const tables = { csvRun: [] as EngineRun[], duckCsv: [] as { rate: Rate; exact: boolean }[], parquetRun: [] as EngineRun[], duckParquet: [] as { rate: Rate; exact: boolean }[] };
        for (let i = 0; i < RUNS; i++) {
          tables.csvRun.push(await runCount(cluster, module, 'csv', path.join(work, 'csv'), csv));
          tables.duckCsv.push(await duckCount(connection, `read_csv('${path.join(work, 'csv', '*.csv')}', header = true)`, csv));
          tables.parquetRun.push(await runCount(cluster, module, 'parquet', parquetDir, parquet));
          tables.duckParquet.push(await duckCount(connection, `read_parquet('${path.join(parquetDir, '*.parquet')}')`, parquet));
        }
        return {
          plain: best(runs.plain),
          one: best(runs.one),
          two: best(runs.two),
          engine: { jsonRun: best(runs.jsonRun), csvRun: best(tables.csvRun), parquetRun: best(tables.parquetRun) },
          duckCsv: best(tables.duckCsv),
          duckParquet: best(tables.duckParquet),
        };
      });
      const { plain, one, two, engine, duckCsv, duckParquet } = results;
      const plainExact = exact(plain.counts, json.counts);

      const ratio = engine.jsonRun.rate.mbPerSec / plain.rate.mbPerSec;
      const ceiling = two.rate.mbPerSec / one.rate.mbPerSec;
      const verdict = ratio >= TARGET ? 'PASS' : 'FAIL';
      const lines = [
        row(['figure', 'measured', 'baseline, same run', 'ratio', 'target']),
        row(['---', '---', '---', '---', '---']),
        row([
          `JSON Lines, ${(json.bytes / 1e6).toFixed(0)} MB, ${formatCount(json.records)} records, count by ${FIELD}, 2 TaskManagers of 1 slot${engine.jsonRun.exact ? ', exact' : ', NOT EXACT'}`,
          mb(engine.jsonRun.rate),
          `plain single-process JSON.parse loop ${mb(plain.rate)}${plainExact ? '' : ' (NOT EXACT)'}`,
          `${ratio.toFixed(2)}x`,
          `>= ${TARGET}x: ${verdict}`,
        ]),
        row(['the same jobs as the JobManager times them (start to end)', `${engine.jsonRun.engineSeconds.toFixed(2)} s`, `${plain.rate.seconds.toFixed(2)} s`, `${(plain.rate.seconds / engine.jsonRun.engineSeconds).toFixed(2)}x`, '']),
        row(["the engine's reader (readLines, JSON.parse, a Map) bare in 1 warm worker thread, no engine", mb(one.rate), `the plain loop ${mb(plain.rate)}`, `${(one.rate.mbPerSec / plain.rate.mbPerSec).toFixed(2)}x`, 'what one slot can reach']),
        row(['the same reader bare in 2 warm worker threads against 1', mb(two.rate), mb(one.rate), `${ceiling.toFixed(2)}x`, "the machine's own 2-core scaling in this run"]),
        row(['the 2 bare threads against the plain loop', mb(two.rate), mb(plain.rate), `${(two.rate.mbPerSec / plain.rate.mbPerSec).toFixed(2)}x`, 'the ceiling of the first row']),
        row([
          `CSV, ${(csv.bytes / 1e6).toFixed(0)} MB, ${formatCount(csv.records)} records, header, count by ${FIELD}${engine.csvRun.exact ? ', exact' : ', NOT EXACT'}`,
          mb(engine.csvRun.rate),
          `DuckDB (2 threads) ${mb(duckCsv.rate)}${duckCsv.exact ? '' : ' (NOT EXACT)'}`,
          `${(engine.csvRun.rate.mbPerSec / duckCsv.rate.mbPerSec).toFixed(2)}x`,
          '',
        ]),
        row([
          `Parquet (written by DuckDB), ${(parquet.bytes / 1e6).toFixed(0)} MB, the ${FIELD} column${engine.parquetRun.exact ? ', exact' : ', NOT EXACT'}`,
          mb(engine.parquetRun.rate),
          `DuckDB (2 threads) ${mb(duckParquet.rate)}${duckParquet.exact ? '' : ' (NOT EXACT)'}`,
          `${(engine.parquetRun.rate.mbPerSec / duckParquet.rate.mbPerSec).toFixed(2)}x`,
          '',
        ]),
      ];
      console.log(lines.join('\n'));
      const ceilingOverPlain = two.rate.mbPerSec / plain.rate.mbPerSec;
      if (ratio < TARGET) {
        console.log(
          `\nJSON Lines missed ${TARGET}x: ${ratio.toFixed(2)}x. In this run the bare reader in 2 threads, with no engine, reached ${ceilingOverPlain.toFixed(2)}x the plain loop (${ceiling.toFixed(2)}x over 1 thread): the most 2 slots can reach here.`,
        );
      }
      return { json: { bytes: json.bytes, records: json.records, engine: engine.jsonRun, plain: plain.rate, plainExact, ratio, target: TARGET, pass: ratio >= TARGET, bareOne: one.rate, bareTwo: two.rate, ceiling, ceilingOverPlain }, csv: { bytes: csv.bytes, records: csv.records, engine: engine.csvRun, duckdb: duckCsv }, parquet: { bytes: parquet.bytes, records: parquet.records, engine: engine.parquetRun, duckdb: duckParquet } };
    } finally {
      connection.closeSync();
      duck.closeSync();
      await threads.close();
      fs.rmSync(work, { recursive: true, force: true });
    }
  },
};

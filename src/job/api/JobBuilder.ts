import type { CsvReadOptions, CsvValue } from '../../connectors/csv/CsvOptions.js';
import type { NexmarkEvent, NexmarkOptions } from '../../connectors/nexmark/NexmarkGenerator.js';
import type { ParquetValue } from '../../connectors/parquet/ParquetSchema.js';
import type { PostgresReadOptions } from '../../connectors/postgres/PostgresOptions.js';
import type { RedisStreamEntry, RedisStreamReadOptions } from '../../connectors/redis/RedisOptions.js';
import type { JobDefinition, OnError, Source } from '../JobDefinition.js';
import { definedOf, JobPlan } from './JobPlan.js';
import { Stream } from './Stream.js';

/** A value JSON.parse gives. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * Builds a job with types (Flink's ExecutionEnvironment, Renoir's StreamContext):
 * sources start streams, streams chain operators and exchanges, and build() returns
 * the same JobDefinition a hand-written job is, validated and run the same way.
 *
 *   const job = new JobBuilder('lengths');
 *   job.readText(input).map((line) => line.length).rebalance().collect();
 *   export default job.build();
 */
export class JobBuilder {
  private readonly plan = new JobPlan();

  constructor(readonly name: string) {}

  /**
   * Lines of a text file, a folder of them or a glob, split across the stage's tasks by
   * file and byte range. With `monitor: ms`, `path` is a folder watched every `ms` for new
   * files, each read once, whole, in the order they appear (names starting with `.` are
   * not read: write a file under such a name and rename it when it is complete), and the
   * job runs until it is canceled.
   */
  readText(path: string, options: { monitor?: number } = {}): Stream<string> {
    const source: Source = options.monitor === undefined ? { kind: 'text', text: path } : { kind: 'text', text: path, monitor: options.monitor };
    return new Stream<string>(this.plan, this.plan.add('text', source), 0);
  }

  /**
   * The same text as chunks of whole lines (about 64 KiB of UTF-8 each): for a job
   * that scans bytes itself, such as the word count's byte-level counter. `reuse`:
   * every chunk in one buffer, valid only until the next operator is done with it;
   * for operators that keep nothing of a chunk (no emitting it, no holding it).
   */
  readTextChunks(path: string, options: { reuse?: boolean } = {}): Stream<Uint8Array> {
    const source: Source = options.reuse ? { kind: 'text', text: path, chunks: true, reuse: true } : { kind: 'text', text: path, chunks: true };
    return new Stream<Uint8Array>(this.plan, this.plan.add('text', source), 0);
  }

  /**
   * JSON Lines: one record a line (JSON.parse), of a file, a folder of them or a glob,
   * split across the stage's tasks as text is; `.gz` and `.zst` files are decompressed
   * (each one split). T is what the lines hold (unchecked, as JSON.parse is). A line
   * that does not parse fails the job (SPW_ERR_MALFORMED_INPUT, naming the file and the
   * line), or with `onError: 'skip'` is skipped and counted (`malformedRecords`).
   */
  readJsonLines<T = JsonValue>(path: string, options: { onError?: OnError } = {}): Stream<T> {
    const source: Source = options.onError === undefined ? { kind: 'jsonLines', path } : { kind: 'jsonLines', path, onError: options.onError };
    return new Stream<T>(this.plan, this.plan.add('jsonLines', source), 0);
  }

  /**
   * CSV (RFC 4180), split across the stage's tasks at record boundaries (a quoted
   * field may hold delimiters, quotes and newlines); `.gz` and `.zst` files are
   * decompressed. With `header: true` each record is an object keyed by the file's
   * first record, else an array of fields. Every field is a string unless `columns`
   * names the columns to read and their types (`{ sku: 'string', price: 'number', ok:
   * 'boolean' }`, or by index without a header): then a record holds only those (an
   * array keeps their positions, null elsewhere), an empty typed field is null, and the
   * scanner steps over every other field without decoding it.
   */
  readCsv<T = Record<string, CsvValue>>(path: string, options: CsvReadOptions & { header: true }): Stream<T>;
  readCsv<T = CsvValue[]>(path: string, options?: CsvReadOptions & { header?: false }): Stream<T>;
  readCsv<T>(path: string, options: CsvReadOptions = {}): Stream<T> {
    const source: Source = { kind: 'csv', path, ...definedOf(options) };
    return new Stream<T>(this.plan, this.plan.add('csv', source), 0);
  }

  /**
   * Parquet: each row an object of its columns (`columns`: only these are read), the
   * files' row groups handed to the stage's tasks as they ask. INT64 columns arrive as
   * bigints, timestamps as Dates. T is the row's type (unchecked).
   */
  readParquet<T = Record<string, ParquetValue>>(path: string, options: { columns?: string[] } = {}): Stream<T> {
    const source: Source = options.columns === undefined ? { kind: 'parquet', path } : { kind: 'parquet', path, columns: options.columns };
    return new Stream<T>(this.plan, this.plan.add('parquet', source), 0);
  }

  /**
   * The Nexmark benchmark's events (persons, auctions and bids, as `{ type, person |
   * auction | bid }`), faithful to the suite's reference generator, split across the
   * stage's tasks, the same for a seed: `events` in all (unbounded without), event time
   * spaced at `rate` per second (10,000), which also paces them in wall time when given.
   */
  nexmark(options: NexmarkOptions = {}): Stream<NexmarkEvent> {
    return new Stream<NexmarkEvent>(this.plan, this.plan.add('nexmark', { kind: 'nexmark', nexmark: options }), 0);
  }

  /**
   * The entries of Redis streams, as `{ stream, id, fields }` (`fields` the entry's
   * fields and their string values), each stream read whole by one of the stage's tasks
   * (the JobManager hands the streams out as they ask), in batches of `batchSize`
   * (XREAD COUNT). From the entries after `from` (`'0'`: all). Bounded by default: up to
   * each stream's last entry when the job starts, then the job ends; with `bounded:
   * false` it reads what arrives until it is canceled. A checkpoint holds each stream's
   * last id read, and a restore reads on after it.
   */
  readRedisStream(options: RedisStreamReadOptions): Stream<RedisStreamEntry> {
    return new Stream<RedisStreamEntry>(this.plan, this.plan.add('redisStream', { kind: 'redisStream', ...definedOf(options) }), 0);
  }

  /**
   * The rows of a PostgreSQL query, each an object keyed by column (T, unchecked),
   * streamed through a cursor. With `partitionColumn`, `lowerBound`, `upperBound` and
   * `partitions`, split by ranges of that column as Spark's JDBC reader does (the first
   * range also takes NULLs and values below lowerBound, the last those above
   * upperBound), the ranges handed to the stage's tasks as they ask. Resuming after a
   * restore: with `orderBy` (columns that order the rows totally) a split resumes after
   * the rows it read; without, a split is read again from its start (checkpoints fall
   * between splits).
   */
  readPostgres<T = Record<string, unknown>>(options: PostgresReadOptions): Stream<T> {
    return new Stream<T>(this.plan, this.plan.add('postgres', { kind: 'postgres', ...definedOf(options) }), 0);
  }

  /** The records `generator` yields for task `subtask` of `parallelism`. */
  generate<T>(generator: (subtask: number, parallelism: number) => Iterable<T>): Stream<T> {
    return new Stream<T>(this.plan, this.plan.add('generate', { kind: 'generate', generate: generator }), 0);
  }

  /** The job definition of everything built so far; its validation runs when the job is submitted. */
  build(): JobDefinition {
    return this.plan.toDefinition(this.name);
  }
}

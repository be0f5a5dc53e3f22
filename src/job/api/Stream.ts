import type { Compression } from '../../connectors/compression/Compression.js';
import type { CsvWriteOptions } from '../../connectors/csv/CsvOptions.js';
import type { ParquetCompression, ParquetSchema } from '../../connectors/parquet/ParquetSchema.js';
import type { CoProcessFunction, ProcessFunction, WindowAggregate } from '../../runtime/operators/ProcessFunction.js';
import { checkedAssigner, type WindowAssigner } from '../../runtime/windows/WindowAssigner.js';
import type { SpillingFold } from '../../runtime/memory/KeyPartitions.js';
import type { OperatorMemory } from '../../runtime/memory/OperatorMemory.js';
import type { PostgresWriteOptions } from '../../connectors/postgres/PostgresOptions.js';
import type { RedisStreamWriteOptions } from '../../connectors/redis/RedisOptions.js';
import { InvalidJobError } from '../InvalidJobError.js';
import type { Accumulate, Operator, Partitioning } from '../JobDefinition.js';
import type { PartitionedFormat } from '../../connectors/PartitionedSink.js';
import type { Exchangeable, Key } from './Exchangeable.js';
import { definedOf, type DraftInput, type ExchangeOptions, type JobPlan, type StageDraft } from './JobPlan.js';

/** Passed to a flatMap: each record given to it goes on at once (Flink's Collector). */
export type Emit<T> = (record: T) => void;

/** A keyed fold that keeps a combiner per key (Spark's combineByKey). */
export interface Combine<T, C> {
  /** The combiner of a key's first record. */
  create: (record: T) => C;
  /** Folds the key's next record into its combiner. */
  merge: (combiner: C, record: T) => C;
  /**
   * Two combiners of one key, from different tasks: must be associative and
   * commutative. Combiners cross the exchange, so C must be Exchangeable: the check
   * sits on this return type, where it does not change how C is inferred.
   */
  mergeCombiners: (a: C, b: C) => NoInfer<Exchangeable<C>>;
}

/**
 * Per-task state that records are added to, and that gives out records of type R
 * (Flink's mapPartition): when it likes, and once the task's input has ended.
 */
export interface Accumulator<A, T, R> {
  /** The task's state; made once, before the first record. */
  create(): A;
  /** Adds a record; may emit records (or return them), for example to bound the state. */
  add(state: A, record: T, emit: Emit<R>): Iterable<R> | void;
  /** After the last record: the state's records, emitted or returned. */
  emit(state: A, emit: Emit<R>): Iterable<R> | void;
}

/** What assignTimestamps makes of event time beyond each record's timestamp. */
export interface TimestampOptions {
  /** How far out of order records may come, ms: the watermark trails the highest timestamp seen by this much (0). */
  maxOutOfOrderness?: number;
  /** After this many ms without a record, the stream is idle and holds no consumer's watermark back (off by default). */
  idleness?: number;
  /** How often a watermark is made, ms (200). */
  interval?: number;
}

/** A window's result for one key: `end` is exclusive, times in ms. */
export interface WindowResult<K, R> {
  key: K;
  start: number;
  end: number;
  value: R;
}

/** A global window's result (windowAll). */
export interface AllWindowResult<R> {
  start: number;
  end: number;
  value: R;
}

/** How a window treats late records. */
export interface WindowOptions {
  /** How long past a window's end a late record still updates it (and fires it again), ms (0); later ones are dropped and counted. */
  allowedLateness?: number;
}

/**
 * Records of type T flowing through one stage of a job (Renoir's Stream, Flink's
 * DataSet). map, flatMap, filter, aggregate, accumulate, sortBy and fold chain onto the stage: no
 * serialization between them. keyBy, partitionBy*, rebalance, broadcast and forward
 * make an exchange, and what follows runs in a new stage; there, the records (and the
 * key) must be Exchangeable, which the compiler checks at that call. collect, discard,
 * writeText, writeJsonLines, writeCsv, writeParquet, writeRedisStream and writePostgres
 * end the stage in a sink.
 *
 * A stream goes on in one direction: once its stage feeds an exchange or a sink, the
 * stream is not continued with chained operators (that would change what the exchange
 * reads); `.forward()` starts a new stage to branch from.
 */
export class Stream<T> {
  /** @internal Made by JobBuilder and by the operators of Stream and KeyedStream. */
  constructor(
    private readonly plan: JobPlan,
    private readonly stage: StageDraft,
    /** How many of the stage's operators this stream has gone through. */
    private readonly at: number,
  ) {}

  /** Names the stage this stream runs in (its tasks are `name#i`); by default stages are named after their first step. */
  name(stageName: string): Stream<T> {
    this.stage.explicitName = stageName;
    return this;
  }

  /** Sets the parallelism of the stage this stream runs in; by default the job's, which bounds it. */
  parallelism(parallelism: number): Stream<T> {
    this.stage.parallelism = parallelism;
    return this;
  }

  map<U>(f: (record: T) => U): Stream<U> {
    return this.chain({ kind: 'map', map: erase(f) });
  }

  /** Returns each record's outputs as an array or iterable, or passes each to `emit` (no array per record) and returns nothing. */
  flatMap<U>(f: (record: T, emit: Emit<U>) => Iterable<U> | void): Stream<U> {
    return this.chain({ kind: 'flatMap', flatMap: erase(f) });
  }

  filter<S extends T>(predicate: (record: T) => record is S): Stream<S>;
  filter(predicate: (record: T) => boolean): Stream<T>;
  filter(predicate: (record: T) => boolean): Stream<T> {
    return this.chain({ kind: 'filter', filter: erase(predicate) });
  }

  /** Folds each task's records into one value, emitted when the task's input ends. */
  aggregate<A>(zero: () => A, add: (accumulator: A, record: T) => A): Stream<A> {
    return this.chain({ kind: 'aggregate', aggregate: { zero, add: erase(add) } });
  }

  /** Adds each task's records to a state of its own, which gives out records when it likes and at the end. */
  accumulate<A, R>(accumulator: Accumulator<A, T, R>): Stream<R> {
    return this.chain({ kind: 'accumulate', accumulate: accumulator as unknown as Accumulate });
  }

  /** Sorts each task's records by key when its input ends; after partitionByRange on the same key, the tasks in order are globally sorted. */
  sortBy<K extends Key>(key: (record: T) => K): Stream<T> {
    return this.chain({ kind: 'sortBy', sortBy: { key: erase(key) } });
  }

  /**
   * A keyed fold of your own, for what reduce and combine do not express well (the
   * built-in word count adds up packed byte counts with one): `create` makes it once
   * per task, given the task's share of managed memory for it (OperatorMemory); it is
   * fed each record and finished when the input ends, and must keep within its share,
   * spilling past it (SpillingFold says how). Usually after an exchange by key.
   */
  fold<R>(create: (memory: OperatorMemory) => SpillingFold<T, R>): Stream<R> {
    return this.chain({ kind: 'fold', fold: erase(create) });
  }

  /**
   * Gives each record its event timestamp (ms) for the windows and timers after it. In
   * an unbounded job it also makes the watermarks: every 200 ms, the highest timestamp
   * seen less `maxOutOfOrderness` less 1. A bounded job makes none: its event time ends
   * with its input, when every window fires, so no record is ever late.
   */
  assignTimestamps(timestamp: (record: T) => number, options: TimestampOptions = {}): Stream<T> {
    return this.chain({ kind: 'assignTimestamps', assignTimestamps: { timestamp: erase(timestamp), ...options } });
  }

  /**
   * One global window stream: every record goes to one task (Flink's windowAll), whose
   * windows give `{ start, end, value }`.
   */
  windowAll(this: Stream<Exchangeable<T>>, assigner: WindowAssigner, options: WindowOptions = {}): AllWindowedStream<T> {
    this.stage.feed(this.at, 'windowAll');
    const input: DraftInput = { from: this.stage, partitioning: { type: 'hash', key: () => 0 }, options: {} };
    return new AllWindowedStream<T>(this.plan, input, checkedAssigner(assigner), options);
  }

  /** Hash-partitions the records by key (Flink key groups) for a keyed reduce, combine or join. */
  keyBy<K extends Key>(this: Stream<Exchangeable<T>>, key: (record: T) => K, options: ExchangeOptions = {}): KeyedStream<T, K> {
    this.stage.feed(this.at, 'keyBy');
    return new KeyedStream<T, K>(this.plan, { from: this.stage, partitioning: { type: 'hash', key: erase(key) }, options }, key);
  }

  /** A new stage whose tasks each read the records of one hash range of keys. */
  partitionByHash<K extends Key>(this: Stream<Exchangeable<T>>, key: (record: T) => K, options: ExchangeOptions = {}): Stream<T> {
    return this.exchange('hash', { type: 'hash', key: erase(key) }, options);
  }

  /** A new stage whose task i reads the keys below `boundaries(parallelism)[i]` and from the one before it on. */
  partitionByRange<K extends Key>(
    this: Stream<Exchangeable<T>>,
    key: (record: T) => K,
    boundaries: (parallelism: number) => K[],
    options: ExchangeOptions = {},
  ): Stream<T> {
    return this.exchange('range', { type: 'range', key: erase(key), boundaries }, options);
  }

  /** A new stage; records are dealt round-robin to its tasks. */
  rebalance(this: Stream<Exchangeable<T>>, options: ExchangeOptions = {}): Stream<T> {
    return this.exchange('rebalance', { type: 'rebalance' }, options);
  }

  /** A new stage; every task of it reads every record. */
  broadcast(this: Stream<Exchangeable<T>>, options: ExchangeOptions = {}): Stream<T> {
    return this.exchange('broadcast', { type: 'broadcast' }, options);
  }

  /** A new stage of the same parallelism; task i reads task i's records. Also the way to branch a stream. */
  forward(this: Stream<Exchangeable<T>>, options: ExchangeOptions = {}): Stream<T> {
    return this.exchange('forward', { type: 'forward' }, options);
  }

  /** Sends the records to the JobManager (GET /jobs/:id/result); they travel packed as across an exchange. */
  collect(this: Stream<Exchangeable<T>>): void {
    this.stage.end(this.at, 'collect', { kind: 'collect' });
  }

  /**
   * Writes one file per task into `folder` (part-00000, ...), a record a line: a [key,
   * value] pair as key<TAB>value, anything else as JSON. With `compression` ('gzip',
   * 'zstd') the files are compressed and named part-00000.gz or .zst.
   */
  writeText(folder: string, options: { compression?: Compression } = {}): void {
    const { compression } = options;
    this.stage.end(this.at, 'writeText', compression === undefined ? { kind: 'text', text: folder } : { kind: 'text', text: folder, compression });
  }

  /** Writes one JSON Lines file per task into `folder` (part-00000, ..., or .gz / .zst compressed), a record a line as JSON.stringify writes it. */
  writeJsonLines(folder: string, options: { compression?: Compression } = {}): void {
    const { compression } = options;
    this.stage.end(this.at, 'writeJsonLines', compression === undefined ? { kind: 'jsonLines', path: folder } : { kind: 'jsonLines', path: folder, compression });
  }

  /**
   * Writes one CSV file per task into `folder` (part-00000, ...): an object record by
   * `columns` (default: the first record's keys), an array as its fields; `header`
   * starts each file with the column names. Fields are quoted as RFC 4180 wants; null
   * is an empty field, a Date its ISO string, an object its JSON.
   */
  writeCsv(folder: string, options: CsvWriteOptions = {}): void {
    this.stage.end(this.at, 'writeCsv', { kind: 'csv', path: folder, ...definedOf(options) });
  }

  /**
   * Writes one Parquet file per task into `folder` (part-00000.parquet, ...) of the
   * columns `schema` names, each record an object (`{ name: 'UTF8', price: 'DOUBLE',
   * n: 'INT64' }`: see ParquetSchema); pages are snappy-compressed unless `compression`
   * says, in row groups (the splits a reader gets) of `rowGroupRows` rows (100,000).
   */
  writeParquet(folder: string, schema: ParquetSchema, options: { compression?: ParquetCompression; rowGroupRows?: number } = {}): void {
    this.stage.end(this.at, 'writeParquet', { kind: 'parquet', path: folder, schema, ...definedOf(options) });
  }

  /**
   * Writes object records into a folder per value of the `partitionBy` fields (Hive's
   * `col=value/`, nested in their order, as Flink's filesystem connector), each folder's
   * part files by `format` (a JSON Lines, CSV or Parquet sink's options); the partition
   * fields are in the path, not in the files.
   */
  writePartitioned(folder: string, partitionBy: string[], format: PartitionedFormat): void {
    this.stage.end(this.at, 'writePartitioned', { kind: 'partitioned', path: folder, partitionBy, format });
  }

  /**
   * Adds each record to a Redis stream as an entry (XADD; Redis makes the id): the
   * record's own fields, a string as it is, bytes as bytes, anything else as JSON. In
   * pipelined batches without checkpoints; with them, exactly once: a checkpoint's
   * entries are written when it completes, in one MULTI/EXEC with the task's commit
   * key, which a retried commit finds and writes nothing.
   */
  writeRedisStream(options: RedisStreamWriteOptions): void {
    this.stage.end(this.at, 'writeRedisStream', { kind: 'redisStream', ...options });
  }

  /**
   * Writes each record, an object keyed by column, as a row of a PostgreSQL table, in
   * batches (one INSERT each); with `upsertKey` a row whose key is there updates it.
   * Without checkpoints, a bounded job's task writes in one transaction committed at
   * the end of its input; with them, exactly once: a checkpoint's rows are written in
   * one transaction with the task's row of the commit table, which a retried commit
   * finds and writes nothing.
   */
  writePostgres(options: PostgresWriteOptions): void {
    this.stage.end(this.at, 'writePostgres', { kind: 'postgres', ...options });
  }

  /** Drops the records (a benchmark's blackhole): what the job costs without its output. */
  discard(): void {
    this.stage.end(this.at, 'discard', { kind: 'discard' });
  }

  private chain<U>(op: Operator): Stream<U> {
    return new Stream<U>(this.plan, this.stage, this.stage.append(this.at, op));
  }

  private exchange<U>(kind: string, partitioning: Partitioning, options: ExchangeOptions): Stream<U> {
    this.stage.feed(this.at, kind);
    const stage = this.plan.add(kind, undefined, [{ from: this.stage, partitioning, options }]);
    return new Stream<U>(this.plan, stage, 0);
  }
}

/**
 * Records of type T hash-partitioned by a key of type K: what crosses the exchange
 * depends on what follows, so the new stage is made by reduce, combine or join.
 */
export class KeyedStream<T, K extends Key> {
  /** @internal Made by Stream.keyBy. */
  constructor(
    private readonly plan: JobPlan,
    private readonly input: DraftInput,
    private readonly key: (record: T) => K,
  ) {}

  /** One record per key: f folds a key's records, must be associative and commutative, and is also applied before the exchange. */
  reduce(f: (a: T, b: T) => T): Stream<T> {
    return this.stage<T>('reduce', [this.input], { kind: 'reduceByKey', reduceByKey: { key: erase(this.key), reduce: erase(f) } });
  }

  /**
   * One [key, combiner] per key. Each task combines its records before the exchange,
   * so only combiners cross it: C must be Exchangeable.
   */
  combine<C>(spec: Combine<T, C>): Stream<[K, C]> {
    const { create, merge, mergeCombiners } = spec;
    return this.stage<[K, C]>('combine', [this.input], {
      kind: 'combineByKey',
      combineByKey: { key: erase(this.key), create: erase(create), merge: erase(merge), mergeCombiners: erase(mergeCombiners) },
    });
  }

  /**
   * A hash join on the key: `combine` for every pair of a record of this stream and
   * one of `other` with an equal key. This stream is the build side, held in memory
   * while `other` streams by: make it the smaller one. With `{ window }`, a windowed
   * join instead (Flink's): the pairs with equal keys whose event timestamps fall in
   * the same window, given out when it fires; both inputs are read together.
   */
  join<U, R>(other: KeyedStream<U, K>, combine: (left: T, right: U) => R, options: { window?: WindowAssigner } & WindowOptions = {}): Stream<R> {
    this.sameJob(other, 'join');
    const keys: [never, never] = [erase(this.key), erase(other.key)];
    if (options.window === undefined) return this.stage<R>('join', [this.input, other.input], { kind: 'join', join: { keys, combine: erase(combine) } });
    const windowJoin = { keys, assigner: checkedAssigner(options.window), combine: erase(combine), allowedLateness: options.allowedLateness };
    return this.stage<R>('windowJoin', [this.input, other.input], { kind: 'windowJoin', windowJoin });
  }

  /**
   * A function of the keyed records with state and timers per key (Flink's
   * KeyedProcessFunction): `processElement(record, ctx, emit)` for each record, with
   * `ctx.state.value(name)`, `.list(name)`, `.map(name)` of its key and
   * `ctx.timers.registerEventTime(t)`; `onTimer(time, ctx, emit)` when a timer fires.
   */
  process<R>(fn: ProcessFunction<T, R, K>): Stream<R> {
    return this.stage<R>('process', [this.input], { kind: 'process', process: { key: erase(this.key), fn: fn as ProcessFunction } });
  }

  /** This keyed stream and another of the same key, processed together with one state per key (a stateful join). */
  connect<U>(other: KeyedStream<U, K>): ConnectedStreams<T, U, K> {
    this.sameJob(other, 'connect');
    return new ConnectedStreams<T, U, K>((kind, first) => this.stage(kind, [this.input, other.input], first), this.key, other.key);
  }

  /** Event-time windows of each key: `aggregate` folds each key's window as its records come. */
  window(assigner: WindowAssigner, options: WindowOptions = {}): WindowedStream<T, K> {
    return new WindowedStream<T, K>((kind, first) => this.stage(kind, [this.input], first), this.key, checkedAssigner(assigner), options);
  }

  private sameJob<U>(other: KeyedStream<U, K>, what: string): void {
    if (!this.plan.owns(other.input.from)) throw new InvalidJobError(`${what}: both keyed streams must come from the same JobBuilder`);
  }

  /** A new stage reading `inputs`, its first operator `first`. */
  private stage<U>(kind: string, inputs: readonly DraftInput[], first: Operator): Stream<U> {
    const stage = this.plan.add(kind, undefined, inputs);
    return new Stream<U>(this.plan, stage, stage.append(0, first));
  }
}

/** Makes the stage that reads a keyed input, its first operator given. */
type StageMaker = <U>(kind: string, first: Operator) => Stream<U>;

/** Two keyed streams of one key type, connected: `process` reads both together. */
export class ConnectedStreams<A, B, K extends Key> {
  /** @internal Made by KeyedStream.connect. */
  constructor(
    private readonly make: StageMaker,
    private readonly keyA: (record: A) => K,
    private readonly keyB: (record: B) => K,
  ) {}

  /** `processElement1` for each record of the first stream, `processElement2` of the second, one state per key; `onTimer` when a timer fires. */
  process<R>(fn: CoProcessFunction<A, B, R, K>): Stream<R> {
    return this.make<R>('process', { kind: 'coProcess', coProcess: { keys: [erase(this.keyA), erase(this.keyB)], fn: fn as CoProcessFunction } });
  }
}

/** A keyed stream cut into event-time windows. */
export class WindowedStream<T, K extends Key> {
  /** @internal Made by KeyedStream.window. */
  constructor(
    private readonly make: StageMaker,
    private readonly key: (record: T) => K,
    private readonly assigner: WindowAssigner,
    private readonly options: WindowOptions,
  ) {}

  /**
   * Folds each key's window incrementally (Flink's AggregateFunction: one accumulator
   * per key and window) and gives `{ key, start, end, value }` once the watermark
   * passes the window's end (in a bounded job: when the input ends).
   */
  aggregate<A, R>(aggregate: WindowAggregate<T, A, R>): Stream<WindowResult<K, R>> {
    const window = { key: erase(this.key), assigner: this.assigner, aggregate: aggregate as WindowAggregate, allowedLateness: this.options.allowedLateness };
    return this.make<WindowResult<K, R>>('window', { kind: 'window', window });
  }
}

/** A stream cut into global event-time windows, in one task. */
export class AllWindowedStream<T> {
  /** @internal Made by Stream.windowAll. */
  constructor(
    private readonly plan: JobPlan,
    private readonly input: DraftInput,
    private readonly assigner: WindowAssigner,
    private readonly options: WindowOptions,
  ) {}

  /** Folds each window's records incrementally, and gives `{ start, end, value }` once it fires. */
  aggregate<A, R>(aggregate: WindowAggregate<T, A, R>): Stream<AllWindowResult<R>> {
    const stage = this.plan.add('windowAll', undefined, [this.input]);
    stage.parallelism = 1;
    const window = { key: () => 0, assigner: this.assigner, aggregate: aggregate as WindowAggregate, allowedLateness: this.options.allowedLateness, global: true };
    return new Stream<AllWindowResult<R>>(this.plan, stage, stage.append(0, { kind: 'window', window }));
  }
}

/**
 * The job model carries records as `unknown`; a typed function is handed to it here.
 * Sound because the builder applies each function only to the records its type names.
 */
function erase<F extends (...args: never[]) => unknown>(f: F): never {
  return f as never;
}

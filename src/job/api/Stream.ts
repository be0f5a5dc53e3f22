import type { Accumulate, Operator, Partitioning } from '../JobDefinition.js';
import type { Exchangeable, Key } from './Exchangeable.js';
import type { DraftInput, ExchangeOptions, JobPlan, StageDraft } from './JobPlan.js';
import type { WordCountGroup, WordCountRecord } from '../WordCounter.js';

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

/**
 * Records of type T flowing through one stage of a job (Renoir's Stream, Flink's
 * DataSet). map, flatMap, filter, aggregate and sortBy chain onto the stage: no
 * serialization between them. keyBy, partitionBy*, rebalance, broadcast and forward
 * make an exchange, and what follows runs in a new stage; there, the records (and the
 * key) must be Exchangeable, which the compiler checks at that call. collect and
 * writeText end the stage in a sink.
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
    return this.chain('map', { map: erase(f) });
  }

  /** Returns each record's outputs as an array or iterable, or passes each to `emit` (no array per record) and returns nothing. */
  flatMap<U>(f: (record: T, emit: Emit<U>) => Iterable<U> | void): Stream<U> {
    return this.chain('flatMap', { flatMap: erase(f) });
  }

  filter<S extends T>(predicate: (record: T) => record is S): Stream<S>;
  filter(predicate: (record: T) => boolean): Stream<T>;
  filter(predicate: (record: T) => boolean): Stream<T> {
    return this.chain('filter', { filter: erase(predicate) });
  }

  /** Folds each task's records into one value, emitted when the task's input ends. */
  aggregate<A>(zero: () => A, add: (accumulator: A, record: T) => A): Stream<A> {
    return this.chain('aggregate', { aggregate: { zero, add: erase(add) } });
  }

  /** Adds each task's records to a state of its own, which gives out records when it likes and at the end. */
  accumulate<A, R>(accumulator: Accumulator<A, T, R>): Stream<R> {
    return this.chain('accumulate', { accumulate: accumulator as unknown as Accumulate });
  }

  /** Sorts each task's records by key when its input ends; after partitionByRange on the same key, the tasks in order are globally sorted. */
  sortBy<K extends Key>(key: (record: T) => K): Stream<T> {
    return this.chain('sortBy', { sortBy: { key: erase(key) } });
  }

  /**
   * Adds up the word counts of each task's [group, packed] records (WordCounter.groupedCounts,
   * as the built-in countWordGroups ships them, after partitionByHash by group) without a
   * string per record; [word, count] per distinct word when the input ends. Spills past
   * the task's managed memory, as a keyed reduce does.
   */
  sumWordCounts(this: Stream<WordCountGroup>): Stream<WordCountRecord> {
    return this.chain('sumWordCounts', { sumWordCounts: true });
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
    this.stage.end(this.at, 'collect', { collect: true });
  }

  /** Writes one file per task into `folder` (part-00000, ...), a record a line: a [key, value] pair as key<TAB>value, anything else as JSON. */
  writeText(folder: string): void {
    this.stage.end(this.at, 'writeText', { text: folder });
  }

  private chain<U>(what: string, op: Operator): Stream<U> {
    return new Stream<U>(this.plan, this.stage, this.stage.append(this.at, what, op));
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
    return this.stage<T>('reduce', [this.input], { reduceByKey: { key: erase(this.key), reduce: erase(f) } });
  }

  /**
   * One [key, combiner] per key. Each task combines its records before the exchange,
   * so only combiners cross it: C must be Exchangeable.
   */
  combine<C>(spec: Combine<T, C>): Stream<[K, C]> {
    const { create, merge, mergeCombiners } = spec;
    return this.stage<[K, C]>('combine', [this.input], {
      combineByKey: { key: erase(this.key), create: erase(create), merge: erase(merge), mergeCombiners: erase(mergeCombiners) },
    });
  }

  /**
   * A hash join on the key: `combine` for every pair of a record of this stream and
   * one of `other` with an equal key. This stream is the build side, held in memory
   * while `other` streams by: make it the smaller one.
   */
  join<U, R>(other: KeyedStream<U, K>, combine: (left: T, right: U) => R): Stream<R> {
    if (!this.plan.owns(other.input.from)) throw new Error('join: both keyed streams must come from the same JobBuilder');
    return this.stage<R>('join', [this.input, other.input], { join: { keys: [erase(this.key), erase(other.key)], combine: erase(combine) } });
  }

  /** A new stage reading `inputs`, its first operator `first`. */
  private stage<U>(kind: string, inputs: DraftInput[], first: Operator): Stream<U> {
    const stage = this.plan.add(kind, undefined, inputs);
    return new Stream<U>(this.plan, stage, stage.append(0, kind, first));
  }
}

/**
 * The job model carries records as `unknown`; a typed function is handed to it here.
 * Sound because the builder applies each function only to the records its type names.
 */
function erase<F extends (...args: never[]) => unknown>(f: F): never {
  return f as never;
}

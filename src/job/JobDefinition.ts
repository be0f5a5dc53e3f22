/**
 * What a user writes: a job is a small DAG of stages. A stage reads a source or the
 * outputs of earlier stages (each input an exchange), runs a chain of record
 * operators in one task with no serialization between them, and ends in a sink or
 * feeds later stages.
 */

import { type CompressionCodec, compressionCodec } from '../network/buffer/CompressionCodec.js';
import type { Compression } from '../connectors/compression/Compression.js';
import type { CsvColumnTypes } from '../connectors/csv/CsvOptions.js';
import type { ParquetCompression, ParquetSchema } from '../connectors/parquet/ParquetSchema.js';
import { normalizeSink, sinkSpec } from '../connectors/Sinks.js';
import { normalizeSource, sourceSpec } from '../connectors/Sources.js';
import { normalizeOperator, operatorSpec } from '../runtime/operators/Operators.js';
import type { Placement } from '../runtime/operators/OperatorSpec.js';
import type { CoProcessFunction, ProcessFunction, WindowAggregate } from '../runtime/operators/ProcessFunction.js';
import type { WindowAssigner } from '../runtime/windows/WindowAssigner.js';
import type { NexmarkOptions } from '../connectors/nexmark/NexmarkGenerator.js';
import type { PostgresReadOptions, PostgresWriteOptions } from '../connectors/postgres/PostgresOptions.js';
import type { RedisStreamReadOptions, RedisStreamWriteOptions } from '../connectors/redis/RedisOptions.js';
import type { SpillingFold } from '../runtime/memory/KeyPartitions.js';
import type { OperatorMemory } from '../runtime/memory/OperatorMemory.js';
import { SpillwayError } from '../errors/Errors.js';
import { InvalidJobError } from './InvalidJobError.js';

export { InvalidJobError };

export type Key = unknown;
export type KeyFn = (record: unknown) => Key;

/**
 * One operator of a stage's chain, told apart by its `kind` (the field of the same name
 * holds what it runs). The old key-only shape (`{ map: f }`) is also accepted from
 * hand-written jobs and normalized on validation. What each kind means to the engine is
 * its spec: src/runtime/operators/.
 */
export type Operator =
  | { kind: 'map'; map: (record: unknown) => unknown }
  /**
   * Returns the records made from one record, or passes each to `emit` and returns
   * nothing (Flink's Collector): no array per record, each goes straight on.
   */
  | { kind: 'flatMap'; flatMap: (record: unknown, emit: (record: unknown) => void) => Iterable<unknown> | void }
  | { kind: 'filter'; filter: (record: unknown) => boolean }
  /** Keyed aggregation over the whole input; must be associative and commutative, so it is also applied map-side. */
  | { kind: 'reduceByKey'; reduceByKey: { key: KeyFn; reduce: (a: unknown, b: unknown) => unknown } }
  /**
   * Spark's combineByKey: a combiner per key, built from the first record (create),
   * folded with the next ones (merge), and combiners of the same key merged
   * (mergeCombiners). Applied map-side; the stage emits [key, combiner]. Its only
   * input must be hash-partitioned.
   */
  | { kind: 'combineByKey'; combineByKey: CombineByKey }
  /** Folds the task's records into one value, emitted at the end of its input. */
  | { kind: 'aggregate'; aggregate: { zero: () => unknown; add: (accumulator: unknown, record: unknown) => unknown } }
  /** State per task, fed every record; its records come out on the way or at the end of the input (Flink's mapPartition). */
  | { kind: 'accumulate'; accumulate: Accumulate }
  /** Sorts the task's records by key at the end of its input. */
  | { kind: 'sortBy'; sortBy: { key: KeyFn } }
  /**
   * A keyed fold of the user's own: `fold` makes it once per task, given the task's
   * share of managed memory for it; it keeps within the share and spills past it.
   */
  | { kind: 'fold'; fold: (memory: OperatorMemory) => SpillingFold }
  /** Hash join of input 0 (build side) and input 1 (probe side) on their keys; must be the first operator. */
  | { kind: 'join'; join: { keys: [KeyFn, KeyFn]; combine: (left: unknown, right: unknown) => unknown } }
  /**
   * Gives each record its event timestamp (ms). In an unbounded job it also makes the
   * watermarks, every `interval` ms (200): the highest timestamp seen, less
   * `maxOutOfOrderness` (0), less 1 (Flink's bounded-out-of-orderness watermarks); with
   * `idleness`, a stream with no record for that long is idle: it leaves its consumers'
   * watermark minimum until it has records again.
   */
  | { kind: 'assignTimestamps'; assignTimestamps: { timestamp: (record: unknown) => number; maxOutOfOrderness?: number; idleness?: number; interval?: number } }
  /** A keyed process function with state and timers (Flink's KeyedProcessFunction); first in a stage of one hash-partitioned input. */
  | { kind: 'process'; process: { key: KeyFn; fn: ProcessFunction } }
  /** Two keyed inputs processed together with one state per key (Flink's KeyedCoProcessFunction). */
  | { kind: 'coProcess'; coProcess: { keys: [KeyFn, KeyFn]; fn: CoProcessFunction } }
  /**
   * Keyed event-time windows folded incrementally (Flink's window(...).aggregate(...)):
   * `{ key, start, end, value }` once per key and window when the watermark passes its
   * end (`{ start, end, value }` when `global`). Records later than `allowedLateness`
   * (0) past a window's end are dropped and counted.
   */
  | { kind: 'window'; window: { key: KeyFn; assigner: WindowAssigner; aggregate: WindowAggregate; allowedLateness?: number; global?: boolean } }
  /** The pairs of two keyed inputs' records with equal keys in the same window, combined (Flink's window join). */
  | { kind: 'windowJoin'; windowJoin: { keys: [KeyFn, KeyFn]; assigner: WindowAssigner; combine: (left: unknown, right: unknown) => unknown; allowedLateness?: number } };

/** The kinds of operator. */
export type OperatorKind = Operator['kind'];

/** The operator of one kind. */
export type OperatorOf<K extends OperatorKind> = Extract<Operator, { kind: K }>;

export interface CombineByKey {
  key: KeyFn;
  create: (record: unknown) => unknown;
  merge: (combiner: unknown, record: unknown) => unknown;
  mergeCombiners: (a: unknown, b: unknown) => unknown;
}

/**
 * An operator with state per task: `create` makes it when the task starts, `add`
 * feeds it each record, and `emit` turns it into the task's last records once the
 * input has ended (Flink's mapPartition). Both `add` and `emit` may pass records to
 * their `emit` (add, to bound the state: give out what it holds and forget it) or
 * return them: an array, or an iterable such as a generator, which is pulled only as
 * fast as the next step takes them, the way to emit much without holding it twice.
 * Records emitted while the next step waits are held until it may go on.
 * Written with methods, so that an `Accumulate<State>` is an `Accumulate`.
 */
export interface Accumulate<A = unknown> {
  /** Makes the task's state; called once, before the first record. */
  create(): A;
  /** Adds one record to the state; may emit records or return them. */
  add(state: A, record: unknown, emit: (record: unknown) => void): Iterable<unknown> | void;
  /** Called once, after the last record: emits the state's records or returns them. */
  emit(state: A, emit: (record: unknown) => void): Iterable<unknown> | void;
}

export type Partitioning =
  | { type: 'hash'; key: KeyFn }
  | { type: 'range'; key: KeyFn; boundaries: (parallelism: number) => unknown[] }
  | { type: 'rebalance' }
  | { type: 'forward' }
  | { type: 'broadcast' };

export interface StageInput {
  from: string;
  partitioning: Partitioning;
  /** The partition type of this edge (a registered name); the job's `exchange` when absent. */
  exchange?: string;
  /**
   * Compress this edge's buffers (where its type allows): `true` for the default codec
   * (snappy), or a codec's name (`'brotli'`); the job's `compression` when absent.
   */
  compression?: boolean | CompressionCodec;
}

export type Source =
  /**
   * Lines of a text file, a folder of them or a glob, in byte ranges the JobManager
   * hands to the subtasks as they ask (SplitAssigner): each line a string, or with
   * `chunks: true` the undecoded UTF-8 bytes of whole lines, a Buffer of about 64 KiB
   * at a time (for byte-level work such as counting words; each line still belongs to
   * exactly one subtask). With
   * `reuse: true` the chunks share one buffer, each valid only until the operator
   * chain is done with it (Flink's object reuse): for operators that keep nothing of
   * a chunk, it saves faulting in fresh memory for every megabyte read. With
   * `monitor: ms` the path is a folder watched every `ms` for new files (each read once,
   * whole, in the order they appear; names starting with `.` are not read), and the
   * source never ends.
   */
  | { kind: 'text'; text: string; chunks?: boolean; reuse?: boolean; monitor?: number }
  /** Records a function generates for subtask i of n. */
  | { kind: 'generate'; generate: (subtask: number, parallelism: number) => Iterable<unknown> }
  /** The Nexmark benchmark's events (src/connectors/nexmark/): unbounded without `events`; paced in wall time when `rate` is given. */
  | { kind: 'nexmark'; nexmark: NexmarkOptions }
  /**
   * JSON Lines: one record a line (JSON.parse), split across the subtasks as text is.
   * A line that does not parse fails the job with SPW_ERR_MALFORMED_INPUT naming the
   * file and the line (1-based, from the file's start), or with `onError: 'skip'` is
   * skipped and counted in the task's `malformedRecords`. Empty lines are skipped.
   */
  | { kind: 'jsonLines'; path: string; onError?: OnError }
  /**
   * CSV (RFC 4180: quoted fields may hold delimiters, doubled quotes and newlines),
   * split across the subtasks at record boundaries. With `header` a record is an
   * object keyed by the file's first record, else an array; fields are strings but
   * where `columns` types them (an empty typed field is null).
   */
  | { kind: 'csv'; path: string; header?: boolean; columns?: CsvColumnTypes; delimiter?: string; quote?: string; onError?: OnError }
  /** Parquet: each row an object of its columns (`columns`: only these), the files' row groups handed out as splits. */
  | { kind: 'parquet'; path: string; columns?: string[] }
  /**
   * Entries of Redis streams as `{ stream, id, fields }`, a stream a split: bounded (up
   * to each stream's last entry when the job starts) unless `bounded: false`.
   */
  | ({ kind: 'redisStream' } & RedisStreamReadOptions)
  /** Rows of a PostgreSQL query, objects keyed by column, split by ranges of `partitionColumn` as Spark's JDBC reader does. */
  | ({ kind: 'postgres' } & PostgresReadOptions);

/** What a source does with a record it cannot read: fail the job, or skip it and count it. */
export type OnError = 'fail' | 'skip';

/** The kinds of source; what each means to the engine is its spec: src/connectors/. */
export type SourceKind = Source['kind'];
export type SourceOf<K extends SourceKind> = Extract<Source, { kind: K }>;

export type Sink =
  /** Records go to the JobManager: GET /jobs/:id/result. */
  | { kind: 'collect' }
  /**
   * One file per subtask, part-00000...; [key, value] records as key<TAB>value; compressed,
   * part-00000.gz or .zst. With checkpoints, exactly once: a file per checkpoint,
   * part-00000-<job>-<checkpoint>, visible once the checkpoint completes (so for every file sink).
   */
  | { kind: 'text'; text: string; compression?: Compression }
  /** Records are dropped (a benchmark's blackhole). */
  | { kind: 'discard' }
  /** One file per subtask, a record a line as JSON.stringify writes it; compressed, part-00000.gz or .zst. */
  | { kind: 'jsonLines'; path: string; compression?: Compression }
  /** One file per subtask, RFC 4180 CSV: object records by `columns` (default: the first record's keys), arrays as they are. */
  | { kind: 'csv'; path: string; header?: boolean; columns?: string[]; delimiter?: string }
  /** One Parquet file per subtask, part-00000.parquet, of the columns `schema` names, in row groups of `rowGroupRows` rows (100,000). */
  | { kind: 'parquet'; path: string; schema: ParquetSchema; compression?: ParquetCompression; rowGroupRows?: number }
  /** Each record an entry of a Redis stream (XADD); exactly once with checkpoints (MULTI/EXEC with a commit key per subtask). */
  | ({ kind: 'redisStream' } & RedisStreamWriteOptions)
  /** Each record a row of a PostgreSQL table, batched, upserted with `upsertKey`; exactly once with checkpoints (one transaction with a commit row per subtask). */
  | ({ kind: 'postgres' } & PostgresWriteOptions)
  /** A folder per value of the `partitionBy` fields (Hive's `col=value/`), each written by the file sink `format` (its path aside); the fields are in the path, not the files. */
  | { kind: 'partitioned'; path: string; partitionBy: string[]; format: PartitionedFormat };

/** The file sinks a partitioned sink writes each partition's folder with. */
export type PartitionedFormat = DistributiveOmit<Extract<Sink, { kind: 'jsonLines' | 'csv' | 'parquet' }>, 'path'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export type SinkKind = Sink['kind'];
export type SinkOf<K extends SinkKind> = Extract<Sink, { kind: K }>;

export interface StageDefinition {
  name: string;
  source?: Source;
  inputs?: StageInput[];
  operators?: Operator[];
  sink?: Sink;
  /** Defaults to the job's parallelism, which bounds it. */
  parallelism?: number;
}

export interface JobDefinition {
  name: string;
  stages: StageDefinition[];
}

/** A user's module exports a JobDefinition, or a function of the submitted params that returns one. */
export type JobModule = JobDefinition | ((params: Record<string, unknown>) => JobDefinition);

export function defineJob(module: JobModule, params: Record<string, unknown>): JobDefinition {
  return typeof module === 'function' ? module(params) : module;
}

/**
 * Checks the graph before anything runs: names unique, inputs exist, acyclic, each
 * stage has exactly one of source or inputs, every sink reachable from a source,
 * parallelism a positive integer, every operator of a known kind, with its fields,
 * where its spec lets it stand. Returns the stages in topological order, their
 * operators in the `kind` shape (the old key-only shape normalized).
 */
export function validateJob(job: JobDefinition, parallelism: number): StageDefinition[] {
  if (!job || typeof job !== 'object' || !Array.isArray(job.stages)) {
    throw new InvalidJobError('a job needs a list of stages');
  }
  if (!Number.isInteger(parallelism) || parallelism < 1) {
    throw new InvalidJobError(`parallelism must be a positive integer, not ${parallelism}`);
  }
  const byName = new Map<string, StageDefinition>();
  for (const stage of job.stages) {
    if (!stage || typeof stage.name !== 'string' || stage.name === '') throw new InvalidJobError('every stage needs a name');
    if (byName.has(stage.name)) throw new InvalidJobError(`stage name "${stage.name}" is used twice`);
    byName.set(stage.name, normalizeStage(stage));
  }
  const stages = [...byName.values()];
  for (const stage of stages) checkStage(stage, byName, parallelism);
  const order = topologicalOrder(stages, byName);
  checkReachability(stages);
  checkEventTime(order);
  if (!isBounded(order)) checkUnbounded(order);
  return order;
}

/** An operator that works in event time (a window) has a timestamp assigner before it, in its stage or upstream. */
function checkEventTime(stages: readonly StageDefinition[]): void {
  const timestamped = timestampedStages(stages);
  for (const stage of stages) {
    const operators = stage.operators ?? [];
    operators.forEach((op, i) => {
      if (op.kind !== 'window' && op.kind !== 'windowJoin') return;
      const assigned = operators.slice(0, i).some((o) => o.kind === 'assignTimestamps') || (stage.inputs ?? []).every((input) => timestamped.has(input.from));
      if (!assigned) throw new InvalidJobError(`stage "${stage.name}": ${op.kind} works in event time: give its input timestamps with assignTimestamps first`);
    });
  }
}

/** An unbounded job's operators all give out records before their input ends: one that waits for the end would wait forever. */
function checkUnbounded(stages: readonly StageDefinition[]): void {
  for (const stage of stages) {
    for (const op of stage.operators ?? []) {
      if (!operatorSpec(op).endsOnly) continue;
      throw new SpillwayError(
        'SPW_ERR_UNBOUNDED_JOB',
        `stage "${stage.name}": ${op.kind} gives out its records only when its input ends, and this job reads an unbounded source: use a window (keyBy(k).window(w).aggregate(...)) or process() instead`,
      );
    }
  }
}

/** The stage with its source, operators and sink in the `kind` shape (the old key-only shapes normalized). */
export function normalizeStage(stage: StageDefinition): StageDefinition {
  if (stage.operators !== undefined && !Array.isArray(stage.operators)) throw new InvalidJobError(`stage "${stage.name}": operators must be a list`);
  try {
    const normal: StageDefinition = { ...stage };
    if (stage.source !== undefined) normal.source = normalizeSource(stage.source);
    if (stage.operators !== undefined) normal.operators = stage.operators.map(normalizeOperator);
    if (stage.sink !== undefined) normal.sink = normalizeSink(stage.sink);
    return normal;
  } catch (error) {
    throw new InvalidJobError(`stage "${stage.name}": ${(error as Error).message}`);
  }
}

/**
 * The stages whose records carry event timestamps across their output edges: those
 * with a timestamp assigner, and every stage downstream of one.
 */
export function timestampedStages(stages: readonly StageDefinition[]): Set<string> {
  const byName = new Map(stages.map((stage) => [stage.name, stage]));
  const known = new Map<string, boolean>();
  const timestamped = (name: string): boolean => {
    const seen = known.get(name);
    if (seen !== undefined) return seen;
    known.set(name, false);
    const stage = byName.get(name)!;
    const own = (stage.operators ?? []).some((op) => op.kind === 'assignTimestamps');
    const result = own || (stage.inputs ?? []).some((input) => byName.has(input.from) && timestamped(input.from));
    known.set(name, result);
    return result;
  };
  return new Set(stages.map((stage) => stage.name).filter(timestamped));
}

/** Whether every source of the job ends; a job with an unbounded source runs until it is canceled. */
export function isBounded(stages: readonly StageDefinition[]): boolean {
  return stages.every((stage) => stage.source === undefined || sourceSpec(stage.source).bounded(stage.source));
}

function checkStage(stage: StageDefinition, byName: Map<string, StageDefinition>, parallelism: number): void {
  const inputs = stage.inputs ?? [];
  if ((stage.source ? 1 : 0) + (inputs.length > 0 ? 1 : 0) !== 1) {
    throw new InvalidJobError(`stage "${stage.name}" needs either a source or inputs`);
  }
  for (const input of inputs) {
    if (!byName.has(input.from)) throw new InvalidJobError(`stage "${stage.name}" reads unknown stage "${input.from}"`);
    const type = input.partitioning?.type;
    if (!['hash', 'range', 'rebalance', 'forward', 'broadcast'].includes(type)) {
      throw new InvalidJobError(`stage "${stage.name}": unknown partitioning "${type}"`);
    }
    if (input.exchange !== undefined && (typeof input.exchange !== 'string' || input.exchange === '')) {
      throw new InvalidJobError(`stage "${stage.name}": the exchange of its input from "${input.from}" must name a partition type, not ${JSON.stringify(input.exchange)}`);
    }
    try {
      compressionCodec(input.compression);
    } catch (error) {
      throw new InvalidJobError(`stage "${stage.name}": its input from "${input.from}": ${(error as Error).message}`);
    }
  }
  const p = stage.parallelism ?? parallelism;
  if (!Number.isInteger(p) || p < 1) throw new InvalidJobError(`stage "${stage.name}": parallelism must be a positive integer, not ${p}`);
  for (const input of inputs) {
    const upstream = byName.get(input.from)!.parallelism ?? parallelism;
    if (input.partitioning.type === 'forward' && upstream !== p) {
      throw new InvalidJobError(`stage "${stage.name}": a forward input needs equal parallelism, but "${input.from}" has ${upstream} and it has ${p}`);
    }
  }
  if (p > parallelism) throw new InvalidJobError(`stage "${stage.name}": parallelism ${p} exceeds the job's ${parallelism}`);
  checkOperators(stage, inputs);
  const source = stage.source && sourceSpec(stage.source).validate(stage.source);
  if (source !== undefined) throw new InvalidJobError(`stage "${stage.name}": its ${stage.source!.kind} source ${source}`);
  const sink = stage.sink && sinkSpec(stage.sink).validate(stage.sink);
  if (sink !== undefined) throw new InvalidJobError(`stage "${stage.name}": its ${stage.sink!.kind} sink ${sink}`);
}

/** Each operator's fields and place, as its spec says; a stage of several inputs needs a first operator that reads them. */
function checkOperators(stage: StageDefinition, inputs: readonly StageInput[]): void {
  const operators = stage.operators ?? [];
  operators.forEach((op, i) => {
    const spec = operatorSpec(op);
    const problem = spec.validate(op);
    if (problem !== undefined) throw new InvalidJobError(`stage "${stage.name}": operator ${i} (${op.kind}) ${problem}`);
    if (!fits(spec.placement, i, inputs)) throw new InvalidJobError(`stage "${stage.name}": ${op.kind} must be ${placementRule(spec.placement)}`);
  });
  const first = operators[0];
  if (inputs.length > 1 && (first === undefined || operatorSpec(first).placement === 'anywhere')) {
    throw new InvalidJobError(`stage "${stage.name}" has ${inputs.length} inputs; only a join reads more than one`);
  }
}

function fits(placement: Placement, index: number, inputs: readonly StageInput[]): boolean {
  if (placement === 'anywhere') return true;
  const { inputs: count, partitioning } = placement.first;
  return index === 0 && inputs.length === count && (partitioning === undefined || inputs.every((input) => input.partitioning?.type === partitioning));
}

function placementRule(placement: Placement): string {
  if (placement === 'anywhere') return 'anywhere';
  const { inputs, partitioning } = placement.first;
  const count = inputs === 1 ? 'one' : inputs === 2 ? 'two' : String(inputs);
  const kind = partitioning === undefined ? '' : ` ${partitioning}-partitioned`;
  return `the first operator of a stage with ${count}${kind} input${inputs === 1 ? '' : 's'}`;
}

function topologicalOrder(stages: StageDefinition[], byName: Map<string, StageDefinition>): StageDefinition[] {
  const state = new Map<string, 'visiting' | 'done'>();
  const order: StageDefinition[] = [];
  const visit = (stage: StageDefinition, path: string[]): void => {
    const seen = state.get(stage.name);
    if (seen === 'done') return;
    if (seen === 'visiting') {
      const cycle = [...path.slice(path.indexOf(stage.name)), stage.name].join(' -> ');
      throw new InvalidJobError(`the job graph has a cycle: ${cycle}`);
    }
    state.set(stage.name, 'visiting');
    for (const input of stage.inputs ?? []) visit(byName.get(input.from)!, [...path, stage.name]);
    state.set(stage.name, 'done');
    order.push(stage);
  };
  for (const stage of stages) visit(stage, []);
  return order;
}

function checkReachability(stages: StageDefinition[]): void {
  const sinks = stages.filter((s) => s.sink);
  if (sinks.length === 0) throw new InvalidJobError('the job has no sink');
  const consumed = new Set(stages.flatMap((s) => (s.inputs ?? []).map((i) => i.from)));
  for (const stage of stages) {
    if (!stage.sink && !consumed.has(stage.name)) {
      throw new InvalidJobError(`stage "${stage.name}" has neither a sink nor a stage reading it`);
    }
  }
  // Every stage has a source or inputs and the graph is acyclic, so every sink is reachable from a source.
}

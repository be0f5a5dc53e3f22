/**
 * What a user writes: a job is a small DAG of stages. A stage reads a source or the
 * outputs of earlier stages (each input an exchange), runs a chain of record
 * operators in one task with no serialization between them, and ends in a sink or
 * feeds later stages.
 */

import { type CompressionCodec, compressionCodec } from '../network/buffer/CompressionCodec.js';

export type Key = unknown;
export type KeyFn = (record: unknown) => Key;

export type Operator =
  | { map: (record: unknown) => unknown }
  /**
   * Returns the records made from one record, or passes each to `emit` and returns
   * nothing (Flink's Collector): no array per record, each goes straight on.
   */
  | { flatMap: (record: unknown, emit: (record: unknown) => void) => Iterable<unknown> | void }
  | { filter: (record: unknown) => boolean }
  /** Keyed aggregation over the whole input; must be associative and commutative, so it is also applied map-side. */
  | { reduceByKey: { key: KeyFn; reduce: (a: unknown, b: unknown) => unknown } }
  /**
   * Spark's combineByKey: a combiner per key, built from the first record (create),
   * folded with the next ones (merge), and combiners of the same key merged
   * (mergeCombiners). Applied map-side; the stage emits [key, combiner]. Its only
   * input must be hash-partitioned.
   */
  | { combineByKey: CombineByKey }
  /** Folds the task's records into one value, emitted at the end of its input. */
  | { aggregate: { zero: () => unknown; add: (accumulator: unknown, record: unknown) => unknown } }
  /** State per task, fed every record; its records come out on the way or at the end of the input (Flink's mapPartition). */
  | { accumulate: Accumulate }
  /** Sorts the task's records by key at the end of its input. */
  | { sortBy: { key: KeyFn } }
  /**
   * Adds up word counts packed in groups ([group, packed] records of
   * WordCounter.groupedCounts), byte range by byte range; [word, count] per distinct
   * word at the end of its input, spilling past its managed memory.
   */
  | { sumWordCounts: true }
  /** Hash join of input 0 (build side) and input 1 (probe side) on their keys; must be the first operator. */
  | { join: { keys: [KeyFn, KeyFn]; combine: (left: unknown, right: unknown) => unknown } };

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
 * Written with methods, so that an `Accumulate<WordCounter>` is an `Accumulate`.
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
   * at a time (for byte-level work such as WordCounter; each line still belongs to
   * exactly one subtask). With
   * `reuse: true` the chunks share one buffer, each valid only until the operator
   * chain is done with it (Flink's object reuse): for operators that keep nothing of
   * a chunk, it saves faulting in fresh memory for every megabyte read.
   */
  | { text: string; chunks?: boolean; reuse?: boolean }
  /** Records a function generates for subtask i of n. */
  | { generate: (subtask: number, parallelism: number) => Iterable<unknown> };

export type Sink =
  /** Records go to the JobManager: GET /jobs/:id/result. */
  | { collect: true }
  /** One file per subtask, part-00000...; [key, value] records as key<TAB>value. */
  | { text: string };

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

/** A job that breaks a rule: the message names the problem. */
export class InvalidJobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidJobError';
  }
}

/**
 * Checks the graph before anything runs: names unique, inputs exist, acyclic, each
 * stage has exactly one of source or inputs, every sink reachable from a source,
 * parallelism a positive integer. Returns the stages in topological order.
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
    byName.set(stage.name, stage);
  }
  for (const stage of job.stages) checkStage(stage, byName, parallelism);
  const order = topologicalOrder(job.stages, byName);
  checkReachability(job.stages);
  return order;
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
  const operators = stage.operators ?? [];
  operators.forEach((op, i) => {
    if ('join' in op && (i !== 0 || inputs.length !== 2)) {
      throw new InvalidJobError(`stage "${stage.name}": join must be the first operator of a stage with two inputs`);
    }
  });
  operators.forEach((op, i) => {
    if ('combineByKey' in op && (i !== 0 || inputs.length !== 1 || inputs[0].partitioning?.type !== 'hash')) {
      throw new InvalidJobError(`stage "${stage.name}": combineByKey must be the first operator of a stage with one hash-partitioned input`);
    }
  });
  operators.forEach((op, i) => {
    if (!('accumulate' in op)) return;
    const spec = op.accumulate as Partial<Accumulate> | undefined;
    const missing = (['create', 'add', 'emit'] as const).filter((f) => typeof spec?.[f] !== 'function');
    if (missing.length > 0) throw new InvalidJobError(`stage "${stage.name}": operator ${i} (accumulate) needs the function${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  });
  if (stage.source && 'text' in stage.source) validateTextSource(stage.name, stage.source);
  if (inputs.length > 1 && !('join' in (operators[0] ?? {}))) {
    throw new InvalidJobError(`stage "${stage.name}" has ${inputs.length} inputs; only a join reads more than one`);
  }
}

function validateTextSource(stage: string, source: { chunks?: unknown; reuse?: unknown }): void {
  for (const flag of ['chunks', 'reuse'] as const) {
    const value = source[flag];
    if (value !== undefined && typeof value !== 'boolean') throw new InvalidJobError(`stage "${stage}": source ${flag} must be true or false, not ${JSON.stringify(value)}`);
  }
  if (source.reuse === true && source.chunks !== true) throw new InvalidJobError(`stage "${stage}": source reuse applies to chunks only; set chunks: true`);
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

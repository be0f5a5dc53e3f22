import type { Accumulate, CombineByKey, KeyFn, Operator } from '../job/JobDefinition.js';
import { ExternalSorter } from './memory/ExternalSorter.js';
import type { SpillingFold } from './memory/KeyPartitions.js';
import { ManagedMemory } from './memory/ManagedMemory.js';
import { SpillingAggregator } from './memory/SpillingAggregator.js';
import { WordCountMerger } from './memory/WordCountMerger.js';

/** Takes one record; returns a promise only when it must wait (backpressure further down). */
export type Emit = (record: unknown) => void | Promise<void>;

/** A compiled chain: push records in, then end() once to flush what operators held back. */
export interface Chain {
  push: Emit;
  end(): Promise<void>;
}

/**
 * Compiles a stage's operators into nested functions around the output, so a record
 * goes through the whole chain in one call with no serialization or queue between
 * operators (Renoir's block, Flink's operator chaining). Operators that hold data
 * (sortBy, reduceByKey, combineByKey) keep within their share of `memory` and spill
 * past it; without one they hold everything.
 */
export function compileChain(operators: readonly Operator[], output: Emit, endOutput: () => Promise<void>, memory = ManagedMemory.unbounded()): Chain {
  let push = output;
  let end = endOutput;
  for (let i = operators.length - 1; i >= 0; i--) {
    const step = compileOperator(operators[i], push, end, memory);
    push = step.push;
    end = step.end;
  }
  return { push, end };
}

function compileOperator(op: Operator, next: Emit, endNext: () => Promise<void>, memory: ManagedMemory): Chain {
  if ('map' in op) {
    const f = op.map;
    return { push: (r) => next(f(r)), end: endNext };
  }
  if ('filter' in op) {
    const f = op.filter;
    return { push: (r) => (f(r) ? next(r) : undefined), end: endNext };
  }
  if ('flatMap' in op) return { push: flatMapping(op.flatMap, next), end: endNext };
  if ('reduceByKey' in op) return reducing(new SpillingAggregator(op.reduceByKey.key, op.reduceByKey.reduce, memory.operatorBudget, memory), next, endNext);
  if ('combineByKey' in op) {
    // Its input is [key, combiner] pairs from the map-side combiners: merge the combiners.
    const merge = op.combineByKey.mergeCombiners;
    const mergePairs = (a: unknown, b: unknown): Pair => [(a as Pair)[0], merge((a as Pair)[1], (b as Pair)[1])];
    return reducing(new SpillingAggregator(pairKey, mergePairs, memory.operatorBudget, memory), next, endNext);
  }
  if ('aggregate' in op) {
    const { zero, add } = op.aggregate;
    let accumulator = zero();
    return {
      push: (r) => {
        accumulator = add(accumulator, r);
      },
      end: async () => {
        await next(accumulator);
        await endNext();
      },
    };
  }
  if ('accumulate' in op) return accumulating(op.accumulate, next, endNext);
  if ('sortBy' in op) return sorting(new ExternalSorter(op.sortBy.key, memory.operatorBudget, memory), next, endNext);
  if ('sumWordCounts' in op) return reducing(new WordCountMerger(memory.operatorBudget, memory), next, endNext);
  throw new Error('a join is run by its task, not chained');
}

/**
 * A flatMap that returns its records or emits them one by one. Emitted records go
 * on at once; once the next step asks to wait, the rest of this record's output is
 * held until it may go on, so backpressure holds at most one record's output.
 */
function flatMapping(f: (record: unknown, emit: (record: unknown) => void) => Iterable<unknown> | void, next: Emit): Emit {
  let blocked: { until: Promise<void>; held: unknown[] } | null = null;
  const emit = (r: unknown): void => {
    if (blocked) {
      blocked.held.push(r);
      return;
    }
    const waiting = next(r);
    if (waiting) blocked = { until: waiting, held: [] };
  };
  return (r) => {
    const items = f(r, emit);
    if (!blocked) return items ? emitAll(items, next) : undefined;
    const { until, held } = blocked;
    blocked = null;
    return until.then(() => emitAll(items ? [...held, ...items] : held, next));
  };
}

/** Pushes every element, continuing asynchronously only if the next step has to wait. Arrays go by index: no iterator result per element. */
export function emitAll(items: Iterable<unknown>, next: Emit): void | Promise<void> {
  return Array.isArray(items) ? emitFrom(items, 0, next) : emitRest(items[Symbol.iterator](), next);
}

function emitFrom(items: unknown[], from: number, next: Emit): void | Promise<void> {
  for (let i = from; i < items.length; i++) {
    const waiting = next(items[i]);
    if (waiting) return waiting.then(() => emitFrom(items, i + 1, next));
  }
}

function emitRest(iterator: Iterator<unknown>, next: Emit): void | Promise<void> {
  for (let step = iterator.next(); !step.done; step = iterator.next()) {
    const waiting = next(step.value);
    if (waiting) return waiting.then(() => emitRest(iterator, next));
  }
}

/** Keyed aggregation: one value per key, emitted at the end, spilling past its budget. */
function reducing(aggregator: SpillingFold, next: Emit, endNext: () => Promise<void>): Chain {
  return {
    push: (r) => aggregator.push(r),
    end: async () => {
      await aggregator.finish(next);
      await endNext();
    },
  };
}

type Pair = [unknown, unknown];
const pairKey: KeyFn = (r) => (r as Pair)[0];

/** How the map-side combiner folds records and what it ships for a key. */
export interface Combiner {
  key: KeyFn;
  create: (record: unknown) => unknown;
  merge: (combiner: unknown, record: unknown) => unknown;
  toRecord: (key: unknown, combiner: unknown) => unknown;
}

/** A reduceByKey folds records into records; a combineByKey ships [key, combiner]. */
export function combinerOf(op: { reduceByKey: { key: KeyFn; reduce: (a: unknown, b: unknown) => unknown } } | { combineByKey: CombineByKey }): Combiner {
  if ('reduceByKey' in op) {
    return { key: op.reduceByKey.key, create: (r) => r, merge: op.reduceByKey.reduce, toRecord: (_, c) => c };
  }
  const { key, create, merge } = op.combineByKey;
  return { key, create, merge, toRecord: (k, c) => [k, c] };
}

/**
 * Map-side combining before a keyed exchange: folds records per key and ships the
 * combined values, flushing all of them whenever `maxKeys` keys are held, so memory
 * stays bounded whatever the number of keys.
 */
export function combining(combiner: Combiner, next: Emit, endNext: () => Promise<void>, maxKeys = 100_000): Chain {
  const { key, create, merge, toRecord } = combiner;
  const values = new Map<unknown, unknown>();
  const flush = (): void | Promise<void> => {
    const records = Array.from(values, ([k, c]) => toRecord(k, c));
    values.clear();
    return emitAll(records, next);
  };
  return {
    push: (r) => {
      const k = key(r);
      const old = values.get(k);
      values.set(k, old === undefined ? create(r) : merge(old, r));
      if (values.size >= maxKeys) return flush();
    },
    end: async () => {
      const waiting = flush();
      if (waiting) await waiting;
      await endNext();
    },
  };
}

/** State per task fed every record; its records go on as a flatMap's do, at the end waiting where the next step has to, then the end. */
function accumulating(spec: Accumulate, next: Emit, endNext: () => Promise<void>): Chain {
  const state = spec.create();
  return {
    push: flatMapping((r, emit) => spec.add(state, r, emit), next),
    end: async () => {
      const waiting = flatMapping((s, emit) => spec.emit(s, emit), next)(state);
      if (waiting) await waiting;
      await endNext();
    },
  };
}

/** Sorts the task's records by key at the end of its input: an external merge sort past its budget. */
function sorting(sorter: ExternalSorter, next: Emit, endNext: () => Promise<void>): Chain {
  return {
    push: (r) => sorter.push(r),
    end: async () => {
      await sorter.finish(next);
      await endNext();
    },
  };
}

/**
 * The plumbing of a compiled operator chain: what each operator's spec compiles into
 * (src/runtime/operators) and how records go on to the next step. Runs in a task
 * thread, a closure call per record per operator: keep the per-record path flat.
 */
import type { KeyFn } from '../job/KeyFn.js';
import type { SpillingFold } from './memory/KeyPartitions.js';
import { stateKey } from './state/KeyedState.js';

/** Takes one record; returns a promise only when it must wait (backpressure further down). */
export type Emit = (record: unknown) => void | Promise<void>;

/**
 * A compiled chain: push records in, then end() once to flush what operators held back
 * (and, in event time, to fire everything still due: the end of a bounded input is the
 * end of time). `watermark` says event time has passed `watermark` (in an unbounded job
 * only): operators that keep state by event time fire what is due, then pass it on.
 */
export interface Chain {
  push: Emit;
  end(): Promise<void>;
  /** Returns a promise only when it must wait (what it fired meets backpressure). `origin`: the wall-clock time its source made it. */
  watermark(watermark: number, origin: number): void | Promise<void>;
}

/** What an operator compiles into: a chain step, which passes watermarks on unchanged unless it says otherwise. */
export type Step = Omit<Chain, 'watermark'> & Partial<Pick<Chain, 'watermark'>>;

/**
 * A flatMap that returns its records or emits them one by one. Emitted records go
 * on at once; once the next step asks to wait, the rest of this record's output is
 * held until it may go on, so backpressure holds at most one record's output.
 */
export function flatMapping(f: (record: unknown, emit: (record: unknown) => void) => Iterable<unknown> | void, next: Emit): Emit {
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

/** An operator that holds its records until its input ends (a keyed fold, a sort): fed, then finished into the next step, then the end. */
export function holding(fold: Pick<SpillingFold, 'push' | 'finish'>, next: Emit, endNext: () => Promise<void>): Step {
  return {
    push: (r) => fold.push(r),
    end: async () => {
      await fold.finish(next);
      await endNext();
    },
  };
}

/** How the map-side combiner folds records and what it ships for a key. */
export interface Combiner {
  key: KeyFn;
  create: (record: unknown) => unknown;
  merge: (combiner: unknown, record: unknown) => unknown;
  toRecord: (key: unknown, combiner: unknown) => unknown;
}

/** A map-side combiner that folded its last window of `maxKeys` keys from fewer than this many records a key ships records as they come. */
export const MIN_COMBINE_RATIO = 1.25;
/** Windows of `maxKeys` records shipped as they come before the combiner tries folding a window again. */
export const UNCOMBINED_WINDOWS = 8;

/**
 * Map-side combining before a keyed exchange: folds records per key and ships the
 * combined values, flushing all of them whenever `maxKeys` keys are held, so memory
 * stays bounded whatever the number of keys. A key's combiner sits in a cell of the
 * table, so a record of a key held costs one look-up.
 *
 * Adaptive, as Trino's partial aggregation: a window of `maxKeys` keys folded from fewer
 * than MIN_COMBINE_RATIO records a key (keys that hardly repeat) costs two look-ups a
 * record and saves the exchange little, so the next UNCOMBINED_WINDOWS windows' records
 * each go on alone as [key, its combiner], and then a window is folded again to measure anew.
 */
export function combining(combiner: Combiner, next: Emit, endNext: () => Promise<void>, maxKeys = 100_000): Step {
  const { key, create, merge, toRecord } = combiner;
  // By the key's map key (a composite key's JSON), each cell with the key itself for its record.
  const cells = new Map<unknown, { key: unknown; value: unknown }>();
  let folded = 0;
  let uncombined = 0;
  const flush = (): void | Promise<void> => {
    const records = Array.from(cells.values(), (cell) => toRecord(cell.key, cell.value));
    cells.clear();
    folded = 0;
    return emitAll(records, next);
  };
  return {
    push: (r) => {
      const k = key(r);
      if (uncombined > 0) {
        uncombined--;
        return next(toRecord(k, create(r)));
      }
      folded++;
      const mapKey = stateKey(k);
      const cell = cells.get(mapKey);
      if (cell !== undefined) cell.value = merge(cell.value, r);
      else cells.set(mapKey, { key: k, value: create(r) });
      if (cells.size < maxKeys) return;
      if (folded < MIN_COMBINE_RATIO * maxKeys) uncombined = UNCOMBINED_WINDOWS * maxKeys;
      return flush();
    },
    end: async () => {
      const waiting = flush();
      if (waiting) await waiting;
      await endNext();
    },
  };
}

import { bucketOf, mixHash, stableHash } from '../../keys/StableHash.js';
import { pause, type RecordSink } from './RecordSink.js';
import { removeSpillFile, spilledRecords } from './SpillFile.js';
import type { SpillOutput } from './OperatorMemory.js';

/** How many partitions a spilling hash operator splits its keys into, at each level. */
export const SPILL_PARTITIONS = 16;
/** Levels of repartitioning before an operator stops splitting (a key's records cannot be split by hashing). */
export const MAX_SPILL_DEPTH = 4;

/**
 * The partition of a key at a level of repartitioning: its stable hash salted by the
 * level and mixed again, so that it is independent of the exchange's key groups (all
 * the keys of one task share a key-group range) and of the levels above.
 */
export function spillPartition(key: unknown, depth: number): number {
  return bucketOf(mixHash(stableHash(key) ^ levelSalt(depth)), SPILL_PARTITIONS);
}

/** What a level of repartitioning salts its hashes with. */
export function levelSalt(depth: number): number {
  return Math.imul(depth + 1, 0x9e3779b9);
}

/**
 * A keyed fold that holds what it folds until its input ends, keeping within its
 * budget (OperatorMemory.operatorBudget) and spilling past it (SpillingAggregator, a
 * `fold` operator's, the built-in word count's). The usual way to spill: past the
 * budget, write what is held to SPILL_PARTITIONS spill writers by spillPartition of
 * each key at this level, forget it, and at the end fold each partition with a fold of
 * the level below (foldPartitions), down to MAX_SPILL_DEPTH levels.
 */
export interface SpillingFold<T = unknown, R = unknown> {
  /** Folds one record in; may spill. Called once per record, in the task's thread: keep it cheap. */
  push(record: T): void;
  /**
   * Called once, after the last record: passes every result record to `emit`, awaiting
   * the promise it returns when it returns one (the next step has to wait). Resolves
   * once all are emitted; removes its spill files.
   */
  finish(emit: RecordSink<R>): Promise<void>;
  /** The deepest level of repartitioning it used (0: none), where it counts them (for tests). */
  readonly deepest?: number;
}

/**
 * Closes the writers of a level's spilled partitions and folds each partition with a
 * fold of the level below (`inner`): feeds it the file's records (what the level
 * wrote, records of the fold's input type T) a block at a time
 * (the event loop runs between blocks, and `checkpoint` may stop it), removes the
 * file, and finishes it. Returns the deepest level the inner folds used, or null if
 * every partition was empty.
 */
export async function foldPartitions<T, R>(
  writers: readonly SpillOutput[],
  inner: () => SpillingFold<T, R>,
  emit: RecordSink<R>,
  checkpoint: () => void,
): Promise<number | null> {
  let deepest: number | null = null;
  for (const file of writers.map((writer) => writer.close())) {
    if (file.records === 0) {
      removeSpillFile(file);
      continue;
    }
    const fold = inner();
    for (const block of spilledRecords(file)) {
      // A partition holds the records the fold wrote: of its own input type.
      for (const record of block) fold.push(record as T);
      await pause(checkpoint);
    }
    removeSpillFile(file);
    await fold.finish(emit);
    deepest = Math.max(deepest ?? 0, fold.deepest ?? 0);
  }
  return deepest;
}

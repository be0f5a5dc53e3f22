import { mixHash, stableHash } from '../../network/writer/StableHash.js';
import { pause, type RecordSink } from './RecordSink.js';
import { removeSpillFile, spilledRecords, type SpillWriter } from './SpillFile.js';

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
  return mixHash((stableHash(key) ^ levelSalt(depth)) >>> 0) % SPILL_PARTITIONS;
}

/** What a level of repartitioning salts its hashes with. */
export function levelSalt(depth: number): number {
  return Math.imul(depth + 1, 0x9e3779b9);
}

/**
 * A hash operator that holds records until its input ends and spills past its budget
 * (SpillingAggregator, WordCountMerger): fed its records, then finished; `deepest` is
 * the deepest level of repartitioning it used.
 */
export interface SpillingFold {
  push(record: unknown): void;
  finish(emit: RecordSink): Promise<void>;
  readonly deepest: number;
}

/**
 * Closes the writers of a level's spilled partitions and folds each partition with a
 * fold of the level below (`inner`): feeds it the file's records a block at a time
 * (the event loop runs between blocks, and `checkpoint` may stop it), removes the
 * file, and finishes it. Returns the deepest level the inner folds used, or null if
 * every partition was empty.
 */
export async function foldPartitions(
  writers: readonly SpillWriter[],
  inner: () => SpillingFold,
  emit: RecordSink,
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
      for (const record of block) fold.push(record);
      await pause(checkpoint);
    }
    removeSpillFile(file);
    await fold.finish(emit);
    deepest = Math.max(deepest ?? 0, fold.deepest);
  }
  return deepest;
}

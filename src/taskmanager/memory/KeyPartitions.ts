import { mixHash, stableHash } from '../../network/writer/StableHash.js';

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
  return mixHash((stableHash(key) ^ Math.imul(depth + 1, 0x9e3779b9)) >>> 0) % SPILL_PARTITIONS;
}

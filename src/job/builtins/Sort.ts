import { mixHash } from '../../keys/StableHash.js';
import { seededRandom } from '../Corpus.js';
import type { JobDefinition } from '../JobDefinition.js';
import { JobBuilder } from '../api/JobBuilder.js';
import { numberParam, requireString } from '../Params.js';
import { scanPartFiles } from './PartFiles.js';

export type SortRecord = [key: number, value: string];

export const SORT_KEY_RANGE = 2 ** 31;

/** The next key of a subtask's records: uniform in [0, SORT_KEY_RANGE). */
const nextKey = (random: () => number): number => Math.floor(random() * SORT_KEY_RANGE);

/** The record numbers [from, to) that subtask `subtask` of `parallelism` generates. */
function subtaskRange(records: number, subtask: number, parallelism: number): [from: number, to: number] {
  return [Math.floor((subtask * records) / parallelism), Math.floor(((subtask + 1) * records) / parallelism)];
}

/** The records the sort job generates: keys uniform in [0, 2^31), record i's value names it. */
export function* sortInput(records: number, seed: number, subtask = 0, parallelism = 1): Generator<SortRecord> {
  const [from, to] = subtaskRange(records, subtask, parallelism);
  const random = seededRandom(seed + subtask);
  for (let i = from; i < to; i++) yield [nextKey(random), `r${i}`];
}

/** An order-independent sum of (record number, key) pairs: two 32-bit sums of independent hashes, as valsort's checksum. */
class PairChecksum {
  low = 0;
  high = 0;

  add(i: number, key: number): void {
    this.low = (this.low + mixHash(Math.imul(i, 0x9e3779b1) ^ key)) >>> 0;
    this.high = (this.high + mixHash(Math.imul(key, 0x85ebca77) ^ (i + 0x68e31da4))) >>> 0;
  }

  equals(other: PairChecksum): boolean {
    return this.low === other.low && this.high === other.high;
  }
}

/** The checksum of every record of sortInput(records, seed, *, parallelism), making no record. */
function sortInputChecksum(records: number, seed: number, parallelism: number): PairChecksum {
  const sum = new PairChecksum();
  for (let subtask = 0; subtask < parallelism; subtask++) {
    const [from, to] = subtaskRange(records, subtask, parallelism);
    const random = seededRandom(seed + subtask);
    for (let i = from; i < to; i++) sum.add(i, nextKey(random));
  }
  return sum;
}

/**
 * Keyed records range-partitioned (evenly spaced boundaries over the key range) and
 * sorted in each task: the part files read in order are globally sorted.
 */
export function sort(params: Record<string, unknown>): JobDefinition {
  const records = Math.floor(numberParam(params, 'records', 1_000_000));
  const seed = Math.floor(numberParam(params, 'seed', 1));
  const output = params.output === undefined ? undefined : requireString(params, 'output');
  const key = (r: SortRecord): number => r[0];
  const job = new JobBuilder('sort');
  const sorted = job
    .generate((subtask, parallelism) => sortInput(records, seed, subtask, parallelism))
    .name('generate')
    .partitionByRange(key, evenBoundaries)
    .sortBy(key)
    .name('sort');
  if (output === undefined) sorted.collect();
  else sorted.writeText(output);
  return job.build();
}

function evenBoundaries(parallelism: number): number[] {
  return Array.from({ length: parallelism - 1 }, (_, i) => Math.floor(((i + 1) * SORT_KEY_RANGE) / parallelism));
}

/**
 * Checks the part files of a sort job in part order: keys never go down, each of the
 * job's records is there exactly once (a bit a record), and their keys are the job's:
 * the checksum of the (record number, key) pairs read equals that of the input, as
 * the sort benchmark's valsort checks (a wrong key passes with odds of 2^-64). Never
 * holds the records, nor a key a record (a random access into 4 bytes a record cost
 * most of the check's 11 s at 50 M records). Returns the first fault, or null.
 */
export function checkSortOutput(dir: string, records: number, seed: number, parallelism: number): string | null {
  const seen = new Uint8Array(Math.ceil(records / 8));
  const read = new PairChecksum();
  let previous = -Infinity;
  let count = 0;
  const fault = scanPartFiles(dir, ([key, i], file) => {
    if (key < previous) return `${file}: key ${key} after ${previous}`;
    const bit = 1 << (i & 7);
    if (!(i < records) || (seen[i >>> 3] & bit) !== 0) return `${file}: record r${i} is not one of the job's or comes twice`;
    seen[i >>> 3] |= bit;
    read.add(i, key);
    previous = key;
    count++;
    return null;
  });
  if (fault !== null) return fault;
  if (count !== records) return `${count} records written, not ${records}`;
  return read.equals(sortInputChecksum(records, seed, parallelism)) ? null : `the keys written are not the job's: their checksum differs from the input's`;
}

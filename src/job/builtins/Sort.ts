import { seededRandom } from '../Corpus.js';
import type { JobDefinition } from '../JobDefinition.js';
import { JobBuilder } from '../api/JobBuilder.js';
import { numberParam, requireString } from './Params.js';
import { scanPartFiles } from './PartFiles.js';

export type SortRecord = [key: number, value: string];

export const SORT_KEY_RANGE = 2 ** 31;

/** The next key of a subtask's records: uniform in [0, SORT_KEY_RANGE). */
const nextKey = (random: () => number): number => Math.floor(random() * SORT_KEY_RANGE);

/** The records the sort job generates: keys uniform in [0, 2^31), record i's value names it. */
export function* sortInput(records: number, seed: number, subtask = 0, parallelism = 1): Generator<SortRecord> {
  const from = Math.floor((subtask * records) / parallelism);
  const to = Math.floor(((subtask + 1) * records) / parallelism);
  const random = seededRandom(seed + subtask);
  for (let i = from; i < to; i++) yield [nextKey(random), `r${i}`];
}

/** Writes the keys of sortInput(records, seed, subtask, parallelism) into `keys` from their record numbers on, making no record. */
function writeSortKeys(keys: Uint32Array, records: number, seed: number, subtask: number, parallelism: number): void {
  const from = Math.floor((subtask * records) / parallelism);
  const to = Math.floor(((subtask + 1) * records) / parallelism);
  const random = seededRandom(seed + subtask);
  for (let i = from; i < to; i++) keys[i] = nextKey(random);
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

/** Marks a record's key once its line was read: no key is as large. */
const SEEN = 2 ** 32 - 1;

/**
 * Checks the part files of a sort job in part order: keys never go down, and each of
 * the job's records is there exactly once with its key. Holds 4 bytes a record (its
 * key, or SEEN), never the records: one random access a line. Returns the first fault, or null.
 */
export function checkSortOutput(dir: string, records: number, seed: number, parallelism: number): string | null {
  const keyOf = new Uint32Array(records);
  for (let s = 0; s < parallelism; s++) writeSortKeys(keyOf, records, seed, s, parallelism);
  let previous = -Infinity;
  let count = 0;
  const fault = scanPartFiles(dir, ([key, i], file) => {
    if (key < previous) return `${file}: key ${key} after ${previous}`;
    const expected = i < records ? keyOf[i] : undefined;
    if (expected === undefined || expected === SEEN) return `${file}: record r${i} is not one of the job's or comes twice`;
    if (expected !== key) return `${file}: record r${i} has key ${key}, not ${expected}`;
    keyOf[i] = SEEN;
    previous = key;
    count++;
    return null;
  });
  return fault ?? (count === records ? null : `${count} records written, not ${records}`);
}

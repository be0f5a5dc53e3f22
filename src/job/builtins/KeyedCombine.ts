import type { JobDefinition } from '../JobDefinition.js';
import { JobBuilder } from '../api/JobBuilder.js';
import { numberParam } from '../Params.js';

/** A word-count-shaped record: a string key and a count. */
export type KeyedCount = [key: string, count: number];

/** [records counted, distinct keys] of one combining subtask. */
export type CombineSummary = [records: number, keys: number];

/**
 * The benchmark workload of a keyed combine: `records` records [`k<i mod keys>`, 1],
 * keyed by their string and combined into a count per key, then summarized per task.
 * Record i has key i mod keys, so with more keys than the map-side combiner holds at
 * once (100,000) nearly every record crosses the exchange, as in `synthetic`.
 */
export function keyedCombine(params: Record<string, unknown>): JobDefinition {
  const records = Math.floor(numberParam(params, 'records', 1_000_000));
  const keys = Math.floor(numberParam(params, 'keys', 100_000, 1));
  const job = new JobBuilder('combine');
  job
    .generate((subtask, parallelism) => generate(records, keys, subtask, parallelism))
    .name('generate')
    .keyBy((r) => r[0])
    .combine({ create: (r) => r[1], merge: (count, r) => count + r[1], mergeCombiners: (a, b) => a + b })
    .aggregate(
      (): CombineSummary => [0, 0],
      (summary, [, count]) => {
        summary[0] += count;
        summary[1]++;
        return summary;
      },
    )
    .name('count')
    .collect();
  return job.build();
}

function* generate(records: number, keys: number, subtask: number, parallelism: number): Generator<KeyedCount> {
  const from = Math.floor((subtask * records) / parallelism);
  const to = Math.floor(((subtask + 1) * records) / parallelism);
  for (let i = from; i < to; i++) yield [`k${i % keys}`, 1];
}

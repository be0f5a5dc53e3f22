import type { JobDefinition } from '../JobDefinition.js';
import { JobBuilder } from '../api/JobBuilder.js';
import { numberParam } from '../Params.js';

export interface SyntheticRecord {
  key: number;
  payload: string;
}

/** [records counted, distinct keys] of one counting subtask. */
export type SyntheticSummary = [records: number, keys: number];

/**
 * The benchmark workload: `records` records of about `recordSize` bytes over `keys`
 * keys (record i has key i mod keys), shuffled by key and counted per key. Nothing
 * is combined before the exchange: every record crosses it.
 */
export function synthetic(params: Record<string, unknown>): JobDefinition {
  const records = Math.floor(numberParam(params, 'records', 1_000_000));
  const recordSize = Math.floor(numberParam(params, 'recordSize', 100, 16));
  const keys = Math.floor(numberParam(params, 'keys', 100_000, 1));
  // msgpack adds about 12 bytes of structure around the key and the payload.
  const payload = 'x'.repeat(Math.max(0, recordSize - 16));
  const job = new JobBuilder('synthetic');
  job
    .generate((subtask, parallelism) => generate(records, keys, payload, subtask, parallelism))
    .name('generate')
    .partitionByHash((r) => r.key)
    // Keys are 0..keys-1: a count per key in a typed array costs far less than a Map entry.
    .aggregate(
      (): KeyCounts => ({ records: 0, perKey: new Uint32Array(keys) }),
      (counts, r) => {
        counts.perKey[r.key]++;
        counts.records++;
        return counts;
      },
    )
    .map(summarize)
    .name('count')
    .collect();
  return job.build();
}

interface KeyCounts {
  records: number;
  perKey: Uint32Array;
}

function summarize({ records, perKey }: KeyCounts): SyntheticSummary {
  let keys = 0;
  for (const count of perKey) if (count > 0) keys++;
  return [records, keys];
}

function* generate(records: number, keys: number, payload: string, subtask: number, parallelism: number): Generator<SyntheticRecord> {
  const from = Math.floor((subtask * records) / parallelism);
  const to = Math.floor(((subtask + 1) * records) / parallelism);
  for (let i = from; i < to; i++) yield { key: i % keys, payload };
}

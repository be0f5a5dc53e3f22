/** The workloads of the transport benchmark, shared by the benchmark and its task threads. */
export type Workload = 'word tuples' | '100 B records' | '1 KiB records' | 'full buffers, no records';

/** The transport alone: full 32 KiB buffers handed to the partition and recycled unread, no serialization. */
export const BUFFERS: Workload = 'full buffers, no records';

/** The id of the benchmark's one partition. */
export const PARTITION_ID = 'bench';

export interface TransportCase {
  workload: Workload;
  channels: number;
  records: number;
}

export const DEFAULT_CASES: TransportCase[] = [
  { workload: 'word tuples', channels: 1, records: 6_000_000 },
  { workload: 'word tuples', channels: 4, records: 6_000_000 },
  { workload: '100 B records', channels: 1, records: 4_000_000 },
  { workload: '100 B records', channels: 4, records: 4_000_000 },
  { workload: '1 KiB records', channels: 1, records: 1_500_000 },
  { workload: '1 KiB records', channels: 4, records: 1_500_000 },
  { workload: BUFFERS, channels: 1, records: 100_000 },
  { workload: BUFFERS, channels: 4, records: 100_000 },
];

/** 1024 distinct records of the workload, built once: the producer cycles through them. */
export function sampleRecords(workload: Workload): unknown[] {
  const text = (i: number, length: number): string => `${i}:`.padEnd(length, 'abcdefghijklmnopqrstuvwxyz'[i % 26]);
  return Array.from({ length: 1024 }, (_, i) => {
    if (workload === 'word tuples') return [text(i, 3 + (i % 7)), 1];
    // About 100 B and 1 KiB once packed: a few fields, the structure sent once per channel.
    const size = workload === '100 B records' ? 60 : 980;
    return { id: i, key: `key-${String(i).padStart(6, '0')}`, flag: i % 3 === 0, value: text(i, size) };
  });
}

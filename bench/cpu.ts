/**
 * CPU per record (issue 31): the CPU time of every process of the cluster (JobManager
 * and TaskManagers, every thread, user and kernel, from /proc/PID/stat) over a job,
 * divided by the records it shuffled, beside msgpackr alone doing the serialization's
 * share of the same work in this process: a default `new Packr()` (record extension on)
 * packing and unpacking arrays of 1,000 synthetic records. Cluster figures are taken on
 * 2 TaskManagers of 1 slot at parallelism 2, warm, each the fastest of its runs; the
 * baseline runs in turns with the pipelined ones and its best is kept.
 */
import { Packr } from 'msgpackr';
import type { CombineSummary } from '../src/job/builtins/KeyedCombine.js';
import { runSynthetic, SYNTHETIC, type BenchCluster, type Exchange, type JobStatus } from './cluster.js';

/** The parallelism of every CPU figure: one task of each stage per TaskManager. */
export const CPU_PARALLELISM = 2;
/** Records per packed array of the msgpackr baseline. */
const BATCH = 1000;
/** Distinct arrays the baseline cycles through: keys vary as the job's do, without building records in the timed loop. */
const BATCHES = 100;

export interface PackrRun {
  records: number;
  cpuSeconds: number;
  nsPerRecord: number;
}

export interface CpuRun {
  job: 'synthetic' | 'combine';
  exchange: Exchange;
  records: number;
  keys: number;
  /** Records the producing tasks wrote to the exchange (a map-side combine could send fewer). */
  exchanged: number;
  /** The JobManager's time for the job, start to end. */
  seconds: number;
  recordsPerSec: number;
  /** Serialized bytes that crossed the exchange. */
  bytes: number;
  mbPerSec: number;
  /** Of every cluster process, from the POST until the result was fetched. */
  cpuSeconds: number;
  nsPerRecord: number;
}

export interface Best<T> {
  best: T;
  runs: T[];
}

export interface CpuFigures {
  packr?: Best<PackrRun>;
  pipelined?: Best<CpuRun>;
  blocking?: Best<CpuRun>;
  combine?: Best<CpuRun>;
}

export interface CpuSizes {
  repeats: number;
  syntheticRecords: number;
  combineRecords: number;
  combineKeys: number;
}

export const CPU_QUICK: CpuSizes = { repeats: 1, syntheticRecords: 500_000, combineRecords: 500_000, combineKeys: 500_000 };
export const CPU_FULL: CpuSizes = { repeats: 3, syntheticRecords: 10_000_000, combineRecords: 10_000_000, combineKeys: 1_000_000 };

/** msgpackr alone: `records` synthetic records packed and unpacked in arrays of 1,000, CPU time of this process. */
export function measurePackr(records: number, recordSize = SYNTHETIC.recordSize, keys = SYNTHETIC.keys): PackrRun {
  const payload = 'x'.repeat(Math.max(0, recordSize - 16));
  const batches = Array.from({ length: BATCHES }, (_, b) => Array.from({ length: BATCH }, (_, i) => ({ key: (b * BATCH + i) % keys, payload })));
  const packr = new Packr();
  const roundTrips = (count: number): number => {
    let keySum = 0;
    for (let done = 0; done < count; done += BATCH) {
      const back = packr.unpack(packr.pack(batches[(done / BATCH) % BATCHES])) as { key: number }[];
      // Touch every record as the engine's counting task does, so nothing is unpacked in vain.
      for (let i = 0; i < back.length; i++) keySum += back[i].key;
    }
    return keySum;
  };
  roundTrips(Math.min(records, 1_000_000));
  const before = process.cpuUsage();
  const sum = roundTrips(records);
  const used = process.cpuUsage(before);
  if (sum <= 0) throw new Error('msgpackr baseline: nothing came back');
  const cpuSeconds = (used.user + used.system) / 1e6;
  return { records, cpuSeconds, nsPerRecord: (cpuSeconds * 1e9) / records };
}

/** One synthetic run at parallelism 2, with the cluster's CPU over it. */
export async function syntheticCpu(cluster: BenchCluster, records: number, exchange: Exchange): Promise<CpuRun> {
  const cpu = cluster.cpuSeconds();
  const { run, status } = await runSynthetic(cluster, records, exchange, { parallelism: CPU_PARALLELISM });
  const cpuSeconds = cluster.cpuSeconds() - cpu;
  if (!run.exact) throw new Error(`synthetic ${exchange} ${records} records: the collected counts are not exact`);
  return { job: 'synthetic', exchange, records, keys: SYNTHETIC.keys, exchanged: exchanged(status), seconds: run.seconds, recordsPerSec: run.recordsPerSec, bytes: run.bytes, mbPerSec: run.mbPerSec, cpuSeconds, nsPerRecord: (cpuSeconds * 1e9) / records };
}

/** One run of the built-in keyed combine (src/job/builtins/KeyedCombine.ts) at parallelism 2, checked exact. */
export async function combineCpu(cluster: BenchCluster, records: number, keys: number, exchange: Exchange = 'pipelined'): Promise<CpuRun> {
  const cpu = cluster.cpuSeconds();
  const status = await cluster.run({ job: 'combine', params: { records, keys }, exchange, parallelism: CPU_PARALLELISM });
  const summaries = await cluster.result<CombineSummary>(status.id);
  const cpuSeconds = cluster.cpuSeconds() - cpu;
  const counted = summaries.reduce((sum, [n]) => sum + n, 0);
  const distinct = summaries.reduce((sum, [, k]) => sum + k, 0);
  if (counted !== records || distinct !== Math.min(records, keys)) throw new Error(`combine ${records} records: counted ${counted} over ${distinct} keys`);
  const seconds = status.durationMs / 1000;
  const bytes = status.counters.bytesOut;
  return { job: 'combine', exchange, records, keys, exchanged: exchanged(status), seconds, recordsPerSec: records / seconds, bytes, mbPerSec: bytes / seconds / 1e6, cpuSeconds, nsPerRecord: (cpuSeconds * 1e9) / records };
}

function exchanged(status: JobStatus): number {
  return status.tasks.filter((t) => t.stage === 'generate').reduce((sum, t) => sum + t.counters.recordsOut, 0);
}

/**
 * Every CPU figure on `cluster` (2 TaskManagers of 1 slot): a cold first job of each
 * kind, then `repeats` runs of each in turns with the msgpackr baseline. Figures land
 * in `into` as they are measured, so that a part that fails keeps the others.
 */
export async function measureCpu(cluster: BenchCluster, sizes: CpuSizes, into: CpuFigures): Promise<void> {
  const { repeats, syntheticRecords: records } = sizes;
  const fastest = async (warmUp: () => Promise<unknown>, measure: () => Promise<CpuRun>, baseline?: () => void): Promise<Best<CpuRun>> => {
    await warmUp();
    const runs: CpuRun[] = [];
    for (let i = 0; i < repeats; i++) {
      baseline?.();
      runs.push(await measure());
    }
    return best(runs, (r) => r.seconds);
  };
  const packr: PackrRun[] = [];
  const pipelined = (): Promise<CpuRun> => syntheticCpu(cluster, records, 'pipelined');
  into.pipelined = await fastest(pipelined, pipelined, () => {
    packr.push(measurePackr(records));
    into.packr = best(packr, (r) => r.nsPerRecord);
  });
  // The task threads are warm now; a tenth warms what blocking partitions use.
  into.blocking = await fastest(
    () => syntheticCpu(cluster, Math.ceil(records / 10), 'blocking'),
    () => syntheticCpu(cluster, records, 'blocking'),
  );
  into.combine = await fastest(
    () => combineCpu(cluster, Math.ceil(sizes.combineRecords / 10), sizes.combineKeys),
    () => combineCpu(cluster, sizes.combineRecords, sizes.combineKeys),
  );
}

/** The run with the least `key`, and every run. */
export function best<T>(runs: T[], key: (run: T) => number): Best<T> {
  return { best: runs.reduce((a, b) => (key(b) < key(a) ? b : a)), runs };
}

/**
 * Figures of the pluggable partition types (issue 12), each beside its baseline of
 * the same run: sort-merge against today's blocking type at fan-out 32 x 32 (files on
 * disk, throughput) and spilling 4x the network memory (against a disk write); hybrid
 * against pipelined with a slow consumer (when the producers finish); compression on
 * and off for word-like records (bytes on disk, throughput).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus, zipfCorpusText } from '../src/job/Corpus.js';
import { COMPRESSION_CODECS, type CompressionCodec } from '../src/network/buffer/CompressionCodec.js';
import type { SyntheticSummary } from '../src/job/builtins/Synthetic.js';
import type { DiskWriteResult } from './baselines.js';
import { type BenchCluster, type Exchange, type JobStatus, runSpill, type SpillRun, TASK_MANAGERS, withCluster } from './cluster.js';
import { alternateRuns, formatCount, type Measured, measured } from './measure.js';
import { TaskState } from '../src/lifecycle/TaskState.js';

export interface PartitionSizes {
  /** Runs of each figure and its baseline. */
  repeats: number;
  fanOutRecords: number;
  hybridRecords: number;
  /** Bytes of Zipf text whose words are the compression figure's records. */
  corpusBytes: number;
  /** Network memory of the spill cluster's TaskManagers; each gets 4x this much data. */
  spillMemory: string;
  /**
   * Measured runs of the sort-merge spill (after a warm-up run of the same size) and of
   * each compression kind: short jobs (the compression ones about half a second), whose
   * figure is the median of these. On a noisy machine one slow job in three moved the
   * compression ratio by 0.1x; a median of five holds steadier.
   */
  medianOf: number;
}

export const QUICK_PARTITIONS: PartitionSizes = { repeats: 1, fanOutRecords: 64_000, hybridRecords: 100_000, corpusBytes: 4_000_000, spillMemory: '16mb', medianOf: 1 };
export const FULL_PARTITIONS: PartitionSizes = { repeats: 2, fanOutRecords: 1_200_000, hybridRecords: 300_000, corpusBytes: 16_000_000, spillMemory: '32mb', medianOf: 5 };

/** Fan-out 32 x 32: 2 TaskManagers of 16 slots. */
const FAN_OUT = 32;
const FAN_OUT_KEYS = 100_000;
/** The hybrid figure's consumers wait 1 ms every this many records. */
const SLOW_EVERY = 25;
const HYBRID_RECORD_BYTES = 200;

export interface FanOutRun {
  exchange: Exchange;
  records: number;
  seconds: number;
  recordsPerSec: number;
  mbPerSec: number;
  /** The most files one producing task's partition had on disk at any sample. */
  maxFilesPerTask: number;
  exact: boolean;
}

export interface SlowConsumerRun {
  exchange: Exchange;
  records: number;
  /** From the job's start until every producer finished. */
  producerSeconds: number;
  seconds: number;
  bytesOnDisk: number;
  exact: boolean;
}

export interface CompressionRun {
  /** Its codec, or null: plain. */
  codec: CompressionCodec | null;
  records: number;
  seconds: number;
  recordsPerSec: number;
  bytesOnDisk: number;
  exact: boolean;
}

export interface PartitionFigures {
  fanOut?: [blocking: Measured<FanOutRun>, sortMerge: Measured<FanOutRun>];
  sortMergeSpill?: Measured<SpillRun> & { networkMemory: number };
  slowConsumer?: [pipelined: Measured<SlowConsumerRun>, hybrid: Measured<SlowConsumerRun>];
  /** Plain, then each codec of COMPRESSION_CODECS, in that order. */
  compression?: Measured<CompressionRun>[];
}

type Attempt = (part: string, measure: () => Promise<void>) => Promise<void>;

/**
 * Measures every figure of the partition types into `figures`; a part that fails is
 * reported by `attempt`. Each cluster first runs a small job of each kind measured on
 * it: a cold cluster (new task threads, code not yet optimized) would make the first
 * measured run, and so one side of a ratio, several times slower.
 */
export async function measurePartitions(sizes: PartitionSizes, figures: PartitionFigures, attempt: Attempt): Promise<void> {
  const { repeats } = sizes;
  await attempt(`partitions: synthetic fan-out ${FAN_OUT} x ${FAN_OUT}, ${formatCount(sizes.fanOutRecords)} records, sort-merge in turns with blocking`, () =>
    withCluster({ slots: FAN_OUT / TASK_MANAGERS, memory: '96mb' }, async (cluster) => {
      await runFanOut(cluster, sizes.fanOutRecords / 10, 'sort-merge');
      figures.fanOut = await alternateRuns(
        repeats,
        { measure: () => runFanOut(cluster, sizes.fanOutRecords, 'blocking'), key: (r) => r.recordsPerSec },
        { measure: () => runFanOut(cluster, sizes.fanOutRecords, 'sort-merge'), key: (r) => r.recordsPerSec },
      );
    }),
  );
  await attempt(`partitions: sort-merge spilling 4x the network memory (${sizes.spillMemory} a TaskManager); compression of [word, 1] records`, () =>
    withCluster({ memory: sizes.spillMemory }, async (cluster) => {
      await measureSortMergeSpill(cluster, sizes.medianOf, figures);
      await measureCompression(cluster, sizes, figures);
    }),
  );
  await attempt(`partitions: a slow consumer, ${formatCount(sizes.hybridRecords)} records, hybrid in turns with pipelined`, () =>
    withCluster({ memory: '32mb', bufferSize: '4kb' }, async (cluster) => {
      const job = await cluster.upload(SLOW_CONSUMER_JOB);
      for (const exchange of ['pipelined', 'hybrid'] as const) await runSlowConsumer(cluster, job, sizes.hybridRecords / 10, exchange);
      figures.slowConsumer = await alternateRuns(
        repeats,
        { measure: () => runSlowConsumer(cluster, job, sizes.hybridRecords, 'pipelined'), key: (r) => r.producerSeconds },
        { measure: () => runSlowConsumer(cluster, job, sizes.hybridRecords, 'hybrid'), key: (r) => r.producerSeconds },
      );
    }),
  );
}

async function measureSortMergeSpill(cluster: BenchCluster, times: number, figures: PartitionFigures): Promise<void> {
  const networkMemory = (await cluster.memory())[0].memory;
  // A synthetic record of 100 B packs to about 90 bytes (measured: bytesOut / records).
  const records = Math.ceil((4 * networkMemory * TASK_MANAGERS) / 90);
  await runSpill(cluster, records, 'sort-merge');
  const runs: SpillRun[] = [];
  for (let i = 0; i < times; i++) runs.push(await runSpill(cluster, records, 'sort-merge'));
  const byRate = [...runs].sort((a, b) => a.writeMbPerSec - b.writeMbPerSec);
  figures.sortMergeSpill = { median: byRate[Math.floor((byRate.length - 1) / 2)], runs, networkMemory };
}

async function measureCompression(cluster: BenchCluster, sizes: PartitionSizes, figures: PartitionFigures): Promise<void> {
  const corpus = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-bench-words-'));
  try {
    // The word count benchmark's corpus: Zipf s=1 over 50,000 words of 3-12 letters.
    const files = writeCorpus(corpus, 4, Math.ceil(sizes.corpusBytes / 4), 3, zipfCorpusText);
    const words = files.reduce((sum, file) => sum + (fs.readFileSync(file, 'utf8').match(/\S+/g)?.length ?? 0), 0);
    const job = await cluster.upload(WORDS_JOB);
    const kinds = [null, ...COMPRESSION_CODECS];
    for (const codec of COMPRESSION_CODECS) await runCompression(cluster, job, corpus, words, codec);
    const runs = kinds.map((): CompressionRun[] => []);
    for (let i = 0; i < sizes.medianOf; i++) {
      for (const [k, codec] of kinds.entries()) runs[k].push(await runCompression(cluster, job, corpus, words, codec));
    }
    figures.compression = runs.map((list) => measured(list, (r) => r.recordsPerSec));
  } finally {
    fs.rmSync(corpus, { recursive: true, force: true });
  }
}

/** Lists a folder, or nothing if it is not there (any more). */
function list(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * Counts the files of every partition folder of the cluster's TaskManagers, every few
 * ms, and keeps the most; folders there before (an earlier job's, being removed) are not counted.
 */
function watchFiles(cluster: BenchCluster): { stop: () => number } {
  let most = 0;
  const earlier = new Set(cluster.partitionDirs.flatMap((dir) => list(dir).map((partition) => path.join(dir, partition))));
  const sample = (): void => {
    for (const dir of cluster.partitionDirs) {
      for (const partition of list(dir)) {
        if (earlier.has(path.join(dir, partition))) continue;
        try {
          most = Math.max(most, fs.readdirSync(path.join(dir, partition)).length);
        } catch {
          // Released between the two reads.
        }
      }
    }
  };
  const timer = setInterval(sample, 5);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return most;
    },
  };
}

async function runFanOut(cluster: BenchCluster, records: number, exchange: Exchange): Promise<FanOutRun> {
  const files = watchFiles(cluster);
  const running = cluster.run({ job: 'synthetic', params: { records, recordSize: 100, keys: FAN_OUT_KEYS }, exchange, parallelism: FAN_OUT });
  const status = await running.finally(() => files.stop());
  const maxFilesPerTask = files.stop();
  const summaries = await cluster.result<SyntheticSummary>(status.id);
  const counted = summaries.reduce((sum, [n]) => sum + n, 0);
  const seconds = status.durationMs / 1000;
  return { exchange, records, seconds, recordsPerSec: records / seconds, mbPerSec: status.counters.bytesOut / seconds / 1e6, maxFilesPerTask, exact: counted === records };
}

/** Producers of `records` records of 200 B; each consumer waits 1 ms every SLOW_EVERY records (a `map` that waits), then counts and sums. */
const SLOW_CONSUMER_JOB = `
const pause = new Int32Array(new SharedArrayBuffer(4));
export default (params) => {
  const n = Number(params.records);
  const payload = 'y'.repeat(${HYBRID_RECORD_BYTES});
  let seen = 0;
  return {
    name: 'slow-consumer',
    stages: [
      { name: 'generate', source: { kind: 'generate', generate: function* (subtask, parallelism) { for (let i = subtask; i < n; i += parallelism) yield [i, payload]; } } },
      { name: 'slow', inputs: [{ from: 'generate', partitioning: { type: 'rebalance' } }],
        operators: [
          { map: (r) => { if (++seen % ${SLOW_EVERY} === 0) Atomics.wait(pause, 0, 0, 1); return r[0]; } },
          { aggregate: { zero: () => [0, 0], add: (a, i) => [a[0] + 1, a[1] + i] } },
        ],
        sink: { kind: 'collect' } },
    ],
  };
};
`;

async function runSlowConsumer(cluster: BenchCluster, job: string, records: number, exchange: Exchange): Promise<SlowConsumerRun> {
  const before = await cluster.bytesWrittenToDisk();
  let producersDone = 0;
  const onPoll = (status: JobStatus): void => {
    const producers = status.tasks.filter((t) => t.stage === 'generate');
    if (producersDone === 0 && producers.length > 0 && producers.every((t) => t.state === TaskState.FINISHED)) producersDone = Date.now();
  };
  const status = await cluster.run({ module: job, params: { records }, exchange }, onPoll, 20);
  const bytesOnDisk = (await cluster.bytesWrittenToDisk()) - before;
  const sums = await cluster.result<[number, number]>(status.id);
  const exact = sums.reduce((s, [n]) => s + n, 0) === records && sums.reduce((s, [, sum]) => s + sum, 0) === (records * (records - 1)) / 2;
  const ended = status.ended ?? Date.now();
  const producerSeconds = ((producersDone === 0 ? ended : Math.min(producersDone, ended)) - (status.started ?? 0)) / 1000;
  return { exchange, records, producerSeconds, seconds: status.durationMs / 1000, bytesOnDisk, exact };
}

/** Word-count-like records: every word of the text as [word, 1], with no combiner, counted by word over a sort-merge edge. */
const WORDS_JOB = `
export default (params) => ({
  name: 'words',
  stages: [
    { name: 'words', source: { kind: 'text', text: params.input },
      operators: [{ flatMap: (line, emit) => { for (const word of line.match(/\\S+/g) ?? []) emit([word, 1]); } }] },
    { name: 'count', inputs: [{ from: 'words', partitioning: { type: 'hash', key: (r) => r[0] }, exchange: 'sort-merge' }],
      operators: [{ aggregate: { zero: () => 0, add: (a) => a + 1 } }], sink: { kind: 'collect' } },
  ],
});
`;

async function runCompression(cluster: BenchCluster, job: string, input: string, records: number, codec: CompressionCodec | null): Promise<CompressionRun> {
  const before = await cluster.bytesWrittenToDisk();
  const status = await cluster.run({ module: job, params: { input }, compression: codec ?? false });
  const bytesOnDisk = (await cluster.bytesWrittenToDisk()) - before;
  const counts = await cluster.result<number>(status.id);
  const seconds = status.durationMs / 1000;
  return { codec, records, seconds, recordsPerSec: records / seconds, bytesOnDisk, exact: counts.reduce((a, b) => a + b, 0) === records };
}

/** A row of the suite's table. */
export interface PartitionRow {
  figure: string;
  measured: string;
  baseline?: string;
  ratio?: string;
  target?: string;
  result?: 'PASS' | 'FAIL';
}

type Target = (name: string, value: number | null, pass: boolean) => 'PASS' | 'FAIL';

const x = (ratio: number): string => `${ratio.toFixed(2)}x`;
const recs = (perSec: number): string => `${formatCount(perSec)} rec/s`;
const exactness = (runs: readonly { exact: boolean }[]): string => (runs.every((r) => r.exact) ? 'exact' : 'NOT exact');

/** The rows and targets of the partition figures. */
export function partitionRows(figures: PartitionFigures, diskWrite: Measured<DiskWriteResult> | undefined, target: Target): PartitionRow[] {
  const rows: PartitionRow[] = [];
  const [blocking, sortMerge] = figures.fanOut ?? [];
  const files = sortMerge ? Math.max(...sortMerge.runs.map((r) => r.maxFilesPerTask)) : null;
  const blockingFiles = blocking ? Math.max(...blocking.runs.map((r) => r.maxFilesPerTask)) : null;
  rows.push({
    figure: `sort-merge, fan-out ${FAN_OUT} x ${FAN_OUT}: most files on disk per producing task`,
    measured: files === null ? 'error' : `${files} (${exactness(sortMerge!.runs)})`,
    baseline: blockingFiles === null ? 'error' : `blocking ${blockingFiles}`,
    target: '<= 2',
    result: target('sort-merge keeps <= 2 files per producing task at fan-out 32', files, files !== null && files <= 2 && sortMerge!.runs.every((r) => r.exact)),
  });
  const fanOutRatio = blocking && sortMerge ? sortMerge.median.recordsPerSec / blocking.median.recordsPerSec : null;
  rows.push({
    figure: `sort-merge, fan-out ${FAN_OUT} x ${FAN_OUT}, ${blocking ? formatCount(blocking.median.records) : '?'} records: throughput`,
    measured: sortMerge ? `${recs(sortMerge.median.recordsPerSec)} (${sortMerge.median.mbPerSec.toFixed(0)} MB/s)` : 'error',
    baseline: blocking ? `blocking ${recs(blocking.median.recordsPerSec)}, ${exactness(blocking.runs)}` : 'error',
    ratio: fanOutRatio === null ? '' : x(fanOutRatio),
    target: '>= 1.0x',
    result: target('sort-merge >= 1.0x blocking at fan-out 32', fanOutRatio, fanOutRatio !== null && fanOutRatio >= 1),
  });
  const spill = figures.sortMergeSpill;
  const disk = diskWrite?.median.mbPerSec;
  const spillRatio = spill && disk ? spill.median.writeMbPerSec / disk : null;
  rows.push({
    figure: `sort-merge spill write, data ${spill ? (spill.median.bytesWritten / TASK_MANAGERS / spill.networkMemory).toFixed(1) : '?'}x each TaskManager's network memory`,
    measured: spill ? `${spill.median.writeMbPerSec.toFixed(0)} MB/s, ${exactness(spill.runs)}` : 'error',
    baseline: disk ? `disk write ${disk.toFixed(0)} MB/s` : 'error',
    ratio: spillRatio === null ? '' : x(spillRatio),
    target: '>= 0.5x, exact',
    result: target('sort-merge spill write >= 0.5x sequential disk write', spillRatio, spillRatio !== null && spillRatio >= 0.5 && spill!.runs.every((r) => r.exact)),
  });
  const [pipelined, hybrid] = figures.slowConsumer ?? [];
  const hybridRatio = pipelined && hybrid ? pipelined.median.producerSeconds / hybrid.median.producerSeconds : null;
  const spilled = hybrid !== undefined && hybrid.runs.every((r) => r.bytesOnDisk > 0);
  rows.push({
    figure: `hybrid, a consumer that waits, ${hybrid ? formatCount(hybrid.median.records) : '?'} records: producers finished after`,
    measured: hybrid ? `${hybrid.median.producerSeconds.toFixed(2)} s (job ${hybrid.median.seconds.toFixed(2)} s), ${(hybrid.median.bytesOnDisk / 1e6).toFixed(0)} MB spilled, ${exactness(hybrid.runs)}` : 'error',
    baseline: pipelined ? `pipelined ${pipelined.median.producerSeconds.toFixed(2)} s (job ${pipelined.median.seconds.toFixed(2)} s), ${exactness(pipelined.runs)}` : 'error',
    ratio: hybridRatio === null ? '' : `${x(hybridRatio)} sooner`,
    target: '>= 2x sooner, spills, exact',
    result: target('hybrid producers finish >= 2x sooner than pipelined with a slow consumer, spill, exact', hybridRatio, hybridRatio !== null && hybridRatio >= 2 && spilled && hybrid!.runs.every((r) => r.exact)),
  });
  const [plain, ...codecs] = figures.compression ?? [];
  for (const [i, codec] of COMPRESSION_CODECS.entries()) rows.push(...compressionRows(codec, plain, codecs[i], target));
  return rows;
}

/**
 * The codec issue 12's compression targets are checked with: these records' words are
 * random letters, so a codec without entropy coding (Snappy, LZ4) finds only repeated
 * words and makes 1.6-1.9x of them; Brotli's Huffman-coded literals also pay about 5 bits
 * a letter instead of 8. Snappy's rows stand beside it, without a target.
 */
const TARGET_CODEC: CompressionCodec = 'brotli';

/** Bytes on disk and throughput of one codec against plain, in the same run. */
function compressionRows(codec: CompressionCodec, plain: Measured<CompressionRun> | undefined, compressed: Measured<CompressionRun> | undefined, target: Target): PartitionRow[] {
  const smaller = plain && compressed ? plain.median.bytesOnDisk / compressed.median.bytesOnDisk : null;
  const speed = plain && compressed ? compressed.median.recordsPerSec / plain.median.recordsPerSec : null;
  const checked = codec === TARGET_CODEC;
  return [
    {
      figure: `compression (${codec}), [word, 1] of Zipf text over sort-merge, ${plain ? formatCount(plain.median.records) : '?'} records: bytes on disk`,
      measured: compressed ? `${(compressed.median.bytesOnDisk / 1e6).toFixed(1)} MB, ${exactness(compressed.runs)}` : 'error',
      baseline: plain ? `plain ${(plain.median.bytesOnDisk / 1e6).toFixed(1)} MB` : 'error',
      ratio: smaller === null ? '' : `${x(smaller)} smaller`,
      target: checked ? '>= 2x smaller, exact' : '',
      result: checked ? target(`compression (${codec}) writes >= 2x fewer bytes`, smaller, smaller !== null && smaller >= 2 && compressed!.runs.every((r) => r.exact)) : undefined,
    },
    {
      figure: `compression (${codec}): throughput`,
      measured: compressed ? recs(compressed.median.recordsPerSec) : 'error',
      baseline: plain ? `plain ${recs(plain.median.recordsPerSec)}` : 'error',
      ratio: speed === null ? '' : x(speed),
      target: checked ? '>= 0.8x' : '',
      result: checked ? target(`compressed (${codec}) throughput >= 0.8x plain`, speed, speed !== null && speed >= 0.8) : undefined,
    },
  ];
}

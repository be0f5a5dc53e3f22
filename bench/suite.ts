/**
 * The whole `npm run bench` suite: baselines and engine figures measured in the same
 * run, every engine figure printed as a ratio to its baseline with PASS/FAIL against
 * the targets of issue 5, one table on stdout, every figure with the machine and the
 * commit in bench/results/<timestamp>.json and the sweep chart beside it (.svg).
 * Progress goes to stderr. A part that fails is reported in the table (FAIL, with its
 * error) and the suite goes on; every process and temp file it made is gone at the end.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeCorpus, zipfCorpusText } from '../src/job/Corpus.js';
import {
  measureDiskWrite,
  measureIdealPipe,
  measureLoopback,
  plainWordCount,
  type DiskWriteResult,
  type LoopbackResult,
  type PipeResult,
  type PlainWordCountResult,
} from './baselines.js';
import { sweepChartSvg } from './chart.js';
import {
  PARALLELISM,
  SLOTS,
  type BenchCluster,
  runSpill,
  runSynthetic,
  runWordCount,
  SYNTHETIC,
  TASK_MANAGERS,
  withCluster,
  type SpillRun,
  type SyntheticRun,
  type TaskManagerMemory,
  type WordCountRun,
} from './cluster.js';
import { CPU_FULL, CPU_PARALLELISM, CPU_QUICK, measureCpu, type CpuFigures, type CpuRun, type CpuSizes } from './cpu.js';
import { differs, runExample, runOwnCode, uploadExample, type ExampleRun } from './exampleWordCount.js';
import { alternateRuns, formatCount, formatMs, median, MiB, repeatRuns, type Measured } from './measure.js';
import type { ScrapingFigures } from './metrics.js';
import { measureRecovery, RECOVERY_RESTART, type RecoveryFigures } from './recovery.js';
import { machineInfo, resultPath, timestamp, writeResults, type MachineInfo } from './results.js';
import { BareThreads, type ThreadScalingRun } from './threadScaling.js';
import { runSweep, type SweepOptions, type SweepPoint } from './sweep.js';
import { measureTlsTransport, type TlsFigures } from './tls.js';
import { measureTransport, type TransportResult } from './transport.js';
import { FULL_PARTITIONS, measurePartitions, partitionRows, QUICK_PARTITIONS, type PartitionFigures, type PartitionSizes } from './partitions.js';

export interface SuiteOptions {
  quick: boolean;
}

interface Sizes {
  /** Runs of each end-to-end measurement; the median is reported. */
  repeats: number;
  /** Records of the headline synthetic runs (the "10x" of the scaling target; 1x is a tenth). */
  syntheticRecords: number;
  corpusBytes: number;
  corpusFiles: number;
  loopbackBytes: number;
  /** About as many bytes as the loopback baseline moves, so that both run as long. */
  transportRecords: number;
  /** 1 KiB records of each plaintext and TLS transport run. */
  tlsRecords: number;
  diskBytes: number;
  /** Network memory of the spill cluster's TaskManagers; each gets 4x this much data. */
  spillMemory: string;
  /** Corpus of the recovery run (blocking word count, a TaskManager killed halfway). */
  recoveryBytes: number;
  sweep: SweepOptions;
  partitions: PartitionSizes;
  /** The CPU-per-record figures (bench/cpu.ts), on 2 TaskManagers of 1 slot. */
  cpu: CpuSizes;
}

const QUICK: Sizes = {
  repeats: 1,
  syntheticRecords: 2_000_000,
  corpusBytes: 20_000_000,
  corpusFiles: 4,
  loopbackBytes: 1 << 30,
  transportRecords: 1_000_000,
  tlsRecords: 300_000,
  diskBytes: 256 * MiB,
  spillMemory: '32mb',
  recoveryBytes: 10_000_000,
  // A smoke test of the default buffers' points: the quick suite, build included, stays within 2 minutes.
  sweep: { throughputRecords: 200_000, repeats: 1, probeRate: 2000, probeMs: 500, probeWarmupMs: 250, bufferSizes: ['32kb'] },
  partitions: QUICK_PARTITIONS,
  cpu: CPU_QUICK,
};

const FULL: Sizes = {
  repeats: 3,
  syntheticRecords: 10_000_000,
  corpusBytes: 100_000_000,
  corpusFiles: 4,
  loopbackBytes: 4 * 2 ** 30,
  transportRecords: 4_000_000,
  tlsRecords: 1_500_000,
  diskBytes: 1 << 30,
  spillMemory: '64mb',
  recoveryBytes: 100_000_000,
  sweep: { throughputRecords: 1_000_000, repeats: 1, probeRate: 2000, probeMs: 2000, probeWarmupMs: 500 },
  partitions: FULL_PARTITIONS,
  cpu: CPU_FULL,
};

/** How much data the spill run gives each TaskManager, in multiples of its network memory. */
const SPILL_FACTOR = 4;
/** The memory target: peak RSS at most network memory plus this, plus RSS_PER_SLOT for each slot. */
const RSS_HEADROOM = 100 * MiB;
const RSS_PER_SLOT = 60 * MiB;

type PlainFigures = Omit<PlainWordCountResult, 'counts'>;

interface ClusterFigure<T> extends Measured<T> {
  taskManagers: TaskManagerMemory[];
}

interface Figures {
  loopback?: Measured<LoopbackResult>;
  idealPipe?: Measured<PipeResult>;
  plainWordCount?: Measured<PlainFigures>;
  diskWrite?: Measured<DiskWriteResult>;
  transport?: Measured<TransportResult>;
  tls?: TlsFigures;
  synthetic1x?: Measured<SyntheticRun>;
  /** The 10x run; its TaskManagers' peak RSS covers both. */
  synthetic10x?: ClusterFigure<SyntheticRun>;
  /** On 2 TaskManagers of 1 slot: synthetic pipelined and blocking, the keyed combine, and msgpackr alone. */
  cpu?: CpuFigures;
  /** 2 TaskManagers of 1 slot each, parallelism 2, beside the plain word count. */
  wordCount?: ClusterFigure<WordCountRun>;
  /** 1 TaskManager of 2 slots: parallelism 1 and 2 in turns. */
  wordCountOneSlot?: Measured<WordCountRun>;
  wordCountTwoSlots?: ClusterFigure<WordCountRun>;
  /** examples/wordcount.ts on 2 TaskManagers of 1 slot, in turns with its own code in 2 processes; `mismatch` if their counts differ. */
  example?: { engine: Measured<ExampleRun>; own: Measured<ExampleRun>; mismatch?: string };
  /** The engine's tokenizer bare in 1 and 2 worker threads: the machine's own ceiling for the 2-slot figure. */
  bareOneThread?: Measured<ThreadScalingRun>;
  bareTwoThreads?: Measured<ThreadScalingRun>;
  spill?: ClusterFigure<SpillRun> & { networkMemory: number };
  recovery?: RecoveryFigures;
  sweep?: SweepPoint[];
  partitions?: PartitionFigures;
}

export interface SuiteResult {
  stamp: string;
  mode: 'quick' | 'full';
  machine: MachineInfo;
  sizes: Sizes;
  seconds: number;
  figures: Figures;
  targets: TargetResult[];
  errors: { part: string; error: string }[];
  table: string;
  files: { json: string; svg?: string };
}

interface TargetResult {
  target: string;
  value: number | null;
  pass: boolean;
}

/** Runs every part, prints the table, writes the results; resolves with everything it measured. */
export async function runSuite(options: SuiteOptions): Promise<SuiteResult> {
  const sizes = options.quick ? QUICK : FULL;
  const stamp = timestamp();
  const machine = machineInfo();
  const started = performance.now();
  const log = (message: string): void => console.error(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}`);
  log(`bench suite (${options.quick ? 'quick' : 'full'}): ${machine.cores} cores, ${machine.cpuModel}, Node ${machine.node}, commit ${machine.commit}`);
  const figures: Figures = {};
  const errors: { part: string; error: string }[] = [];
  const attempt = async (part: string, measure: () => Promise<void>): Promise<void> => {
    log(part);
    try {
      await measure();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      errors.push({ part, error: message });
      log(`${part} failed: ${message}`);
    }
  };

  await measureAll(sizes, figures, attempt, log);

  const seconds = (performance.now() - started) / 1000;
  const { table, targets } = report(figures, errors, sizes);
  const files = await writeFiles(stamp, figures.sweep, machine, sizes.sweep);
  const result: SuiteResult = { stamp, mode: options.quick ? 'quick' : 'full', machine, sizes, seconds, figures, targets, errors, table, files };
  writeResults(stamp, result);
  console.log(`\nSpillway bench (${result.mode}), ${machine.cores} cores, ${machine.cpuModel}, Node ${machine.node}, commit ${machine.commit}`);
  console.log(`${PARALLELISM}-way parallel on ${TASK_MANAGERS} TaskManagers; medians of ${sizes.repeats} run(s); ${seconds.toFixed(0)} s in all\n`);
  console.log(table);
  // Quick sizes are too small for fixed costs (deployment, a cold disk cache, one run) to vanish: a smoke test.
  const verdict = options.quick ? ' (quick mode: indicative only; the targets are judged on a full run)' : '';
  console.log(`\n${targets.filter((t) => t.pass).length} of ${targets.length} targets pass${verdict}. Results: ${files.json}${files.svg ? `, chart: ${files.svg}` : ''}`);
  return result;
}

type Attempt = (part: string, measure: () => Promise<void>) => Promise<void>;

/** Each engine figure runs in turns with its baseline; the figures without a target reuse those baselines. */
async function measureAll(sizes: Sizes, figures: Figures, attempt: Attempt, log: (message: string) => void): Promise<void> {
  const { repeats } = sizes;
  await attempt('transport: 1 KiB records, one connection, in turns with raw loopback TCP', async () => {
    [figures.loopback, figures.transport] = await alternateRuns(
      repeats,
      { measure: () => measureLoopback(sizes.loopbackBytes), key: (r) => r.mbPerSec },
      { measure: () => measureTransport({ workload: '1 KiB records', channels: 1, records: sizes.transportRecords }), key: (r) => r.mbPerSec },
    );
  });
  await attempt('transport: 1 KiB records, one connection, mutual TLS 1.3 in turns with plain TCP', async () => {
    figures.tls = await measureTlsTransport(repeats, sizes.tlsRecords);
  });
  await measureSynthetic(sizes, figures, attempt);
  await measureWordCounts(sizes, figures, attempt);
  await measureSpill(sizes, figures, attempt);
  await attempt(`recovery: blocking word count, ${sizes.recoveryBytes / 1e6} MB, a TaskManager killed halfway, in turns with an undisturbed run`, async () => {
    figures.recovery = await measureRecovery(sizes.recoveryBytes, sizes.repeats);
  });
  await measurePartitions(sizes.partitions, (figures.partitions = {}), attempt);
  await attempt('sweep: latency against throughput', async () => {
    figures.sweep = await runSweep(sizes.sweep, log);
  });
}

async function measureSynthetic(sizes: Sizes, figures: Figures, attempt: Attempt): Promise<void> {
  const { repeats, syntheticRecords: records } = sizes;
  const oneX = records / 10;
  await attempt(`engine: synthetic pipelined, ${formatCount(oneX)} and ${formatCount(records)} records, in turns with the ideal pipe`, () =>
    withCluster({}, async (cluster) => {
      // A first job of the measured size runs cold: each task thread compiles its own code, and takes a few
      // million records to reach its optimized code; it would flatter the 10x ratio too.
      await runSynthetic(cluster, records, 'pipelined');
      figures.synthetic1x = await repeatRuns(repeats, async () => checked(await runSynthetic(cluster, oneX, 'pipelined')), (r) => r.seconds);
      const [pipe, tenX] = await alternateRuns(
        repeats,
        { measure: () => measureIdealPipe(records, SYNTHETIC.recordSize, SYNTHETIC.keys), key: (r) => r.recordsPerSec },
        { measure: async () => checked(await runSynthetic(cluster, records, 'pipelined')), key: (r) => r.seconds },
      );
      figures.idealPipe = pipe;
      figures.synthetic10x = { ...tenX, taskManagers: await cluster.memory() };
    }),
  );
  // Blocking is measured here, on 1-slot TaskManagers beside pipelined, as issue 31 asks.
  const { cpu } = sizes;
  await attempt(`engine: CPU per record on 2 TaskManagers of 1 slot: synthetic pipelined and blocking, ${formatCount(cpu.syntheticRecords)} records, and combine, ${formatCount(cpu.combineRecords)}, beside msgpackr alone`, () =>
    withCluster({ slots: 1 }, (cluster) => measureCpu(cluster, cpu, (figures.cpu = {}))),
  );
}

/** The synthetic run, failing the part if its result is not exact (a throughput of wrong results means nothing). */
function checked({ run }: { run: SyntheticRun }): SyntheticRun {
  if (!run.exact) throw new Error(`synthetic ${run.exchange} ${run.records} records: the collected counts are not exact`);
  return run;
}

/** The corpus is written to a temp folder for the plain and the cluster word count, and removed. */
async function measureWordCounts(sizes: Sizes, figures: Figures, attempt: Attempt): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-bench-corpus-'));
  try {
    // Zipf s=1 over 50,000 words of 3-12 letters, 5% of them not ASCII: shaped like real text.
    const files = writeCorpus(work, sizes.corpusFiles, Math.ceil(sizes.corpusBytes / sizes.corpusFiles), 1, zipfCorpusText);
    // Counted once outside the timed runs: the reference every engine run is checked against.
    const reference = plainWordCount(files);
    const bytes = reference.bytes;
    const stripCounts = ({ counts: _counts, ...rest }: PlainWordCountResult): PlainFigures => rest;
    const run = (cluster: BenchCluster, parallelism: number) => (): Promise<WordCountRun> => runWordCount(cluster, work, bytes, reference.counts, parallelism);
    await attempt(`engine: word count, ${(bytes / 1e6).toFixed(0)} MB, 2 TaskManagers of 1 slot, in turns with the plain word count`, () =>
      withCluster({ slots: 1 }, async (cluster) => {
        // A first job runs cold (module loading, JIT), as the plain count's reference run did.
        await run(cluster, 2)();
        const [plain, engine] = await alternateRuns(
          sizes.repeats,
          { measure: async () => stripCounts(plainWordCount(files)), key: (r) => r.mbPerSec },
          { measure: run(cluster, 2), key: (r) => r.seconds },
        );
        figures.plainWordCount = plain;
        figures.wordCount = { ...engine, taskManagers: await cluster.memory() };
      }),
    );
    await attempt(`engine: examples/wordcount.ts, ${(bytes / 1e6).toFixed(0)} MB, 2 TaskManagers of 1 slot, in turns with its own code in 2 processes`, () =>
      withCluster({ slots: 1 }, async (cluster) => {
        const module = await uploadExample(cluster);
        await runExample(cluster, module, work, bytes);
        // Each engine run's counts are checked against its own code's of the same turn.
        let ownCounts: ReadonlyMap<string, number> = new Map();
        let mismatch: string | undefined;
        const [own, engine] = await alternateRuns(
          sizes.repeats,
          {
            measure: async () => {
              const { run, counts } = await runOwnCode(files, bytes);
              ownCounts = counts;
              return run;
            },
            key: (r) => r.seconds,
          },
          {
            measure: async () => {
              const { run, counts } = await runExample(cluster, module, work, bytes);
              mismatch ??= differs(counts, ownCounts);
              return run;
            },
            key: (r) => r.seconds,
          },
        );
        figures.example = { engine, own, mismatch };
      }),
    );
    await attempt(`engine: word count, ${(bytes / 1e6).toFixed(0)} MB, 1 TaskManager of 2 slots, parallelism 1 and 2 in turns`, () =>
      withCluster({ taskManagers: 1, slots: 2 }, async (cluster) => {
        await run(cluster, 2)();
        const [one, two] = await alternateRuns(sizes.repeats, { measure: run(cluster, 1), key: (r) => r.seconds }, { measure: run(cluster, 2), key: (r) => r.seconds });
        figures.wordCountOneSlot = one;
        figures.wordCountTwoSlots = { ...two, taskManagers: await cluster.memory() };
      }),
    );
    await attempt(`baseline: the same tokenizer bare in 1 and 2 warm worker threads, in turns`, async () => {
      const bare = new BareThreads(2);
      try {
        // A first run warms the threads up (module loading, JIT), as the engine's first job does its task threads.
        await bare.measure(files, bytes, 2);
        [figures.bareOneThread, figures.bareTwoThreads] = await alternateRuns(
          sizes.repeats,
          { measure: () => bare.measure(files, bytes, 1), key: (r) => r.seconds },
          { measure: () => bare.measure(files, bytes, 2), key: (r) => r.seconds },
        );
      } finally {
        await bare.close();
      }
    });
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

async function measureSpill(sizes: Sizes, figures: Figures, attempt: Attempt): Promise<void> {
  const perRecord = figures.synthetic10x ? figures.synthetic10x.median.bytes / sizes.syntheticRecords : 96;
  await attempt(`engine: blocking synthetic spilling ${SPILL_FACTOR}x the network memory (${sizes.spillMemory} a TaskManager), in turns with a disk write`, () =>
    withCluster({ memory: sizes.spillMemory }, async (cluster) => {
      const networkMemory = (await cluster.memory())[0].memory;
      const records = Math.ceil((SPILL_FACTOR * networkMemory * TASK_MANAGERS) / perRecord);
      // A first job of the same size warms up what spilling uses (see runSpill in bench/cluster.ts).
      await runSynthetic(cluster, records, 'blocking');
      const [disk, spill] = await alternateRuns(
        sizes.repeats,
        { measure: async () => measureDiskWrite(sizes.diskBytes), key: (r) => r.mbPerSec },
        { measure: () => runSpill(cluster, records), key: (r) => r.writeSeconds },
      );
      figures.diskWrite = disk;
      figures.spill = { ...spill, taskManagers: await cluster.memory(), networkMemory };
    }),
  );
}

async function writeFiles(stamp: string, sweep: SweepPoint[] | undefined, machine: MachineInfo, options: SweepOptions): Promise<SuiteResult['files']> {
  const files: SuiteResult['files'] = { json: resultPath(stamp, 'json') };
  if (!sweep || sweep.length === 0) return files;
  const subtitle = `p50 (filled) to p99 (open) latency at ${options.probeRate.toLocaleString('en')} records/s; ${machine.cores} cores, Node ${machine.node}, ${stamp}`;
  files.svg = resultPath(stamp, 'svg');
  fs.writeFileSync(files.svg, await sweepChartSvg(sweep, subtitle));
  return files;
}

// ---- the table ----

export interface Row {
  figure: string;
  measured: string;
  baseline?: string;
  ratio?: string;
  target?: string;
  result?: 'PASS' | 'FAIL' | 'TODO' | 'ERROR';
  rss?: string;
}

const mb = (bytesPerSec: number): string => `${bytesPerSec.toFixed(0)} MB/s`;
const recs = (perSec: number): string => `${formatCount(perSec)} rec/s`;
const x = (ratio: number): string => `${ratio.toFixed(2)}x`;
const verdict = (pass: boolean): 'PASS' | 'FAIL' => (pass ? 'PASS' : 'FAIL');

function rssCell(taskManagers: readonly TaskManagerMemory[]): string {
  return taskManagers.map((tm) => `${tm.id} ${(tm.peakRss / MiB).toFixed(0)}`).join(', ') + ' MiB';
}

/** The table rows and the targets, from whatever was measured; a missing figure fails its target. */
function report(figures: Figures, errors: { part: string; error: string }[], sizes: Sizes): { table: string; targets: TargetResult[] } {
  const rows: Row[] = [];
  const targets: TargetResult[] = [];
  const target = (name: string, value: number | null, pass: boolean): 'PASS' | 'FAIL' => {
    targets.push({ target: name, value, pass });
    return verdict(pass);
  };
  const { loopback, idealPipe, plainWordCount: plain, diskWrite, transport } = figures;
  const pipeRate = idealPipe?.median.recordsPerSec;
  const rawTcp = loopback?.median.mbPerSec;

  rows.push({ figure: `baseline: raw loopback TCP, 2 processes, ${(loopback?.median.chunkBytes ?? 32768) >> 10} KiB writes`, measured: rawTcp ? mb(rawTcp) : 'error' });
  rows.push({
    figure: `baseline: ideal pipe, msgpackr 32 KiB frames, 2 processes, ${formatCount(sizes.syntheticRecords)} x ${SYNTHETIC.recordSize} B`,
    measured: idealPipe ? `${recs(idealPipe.median.recordsPerSec)} (${mb(idealPipe.median.mbPerSec)})` : 'error',
  });
  rows.push({ figure: `baseline: plain word count, 1 process, char-code scan, a slice per word + Map`, measured: plain ? mb(plain.median.mbPerSec) : 'error' });
  rows.push({ figure: `baseline: sequential disk write + fdatasync, ${(sizes.diskBytes / MiB).toFixed(0)} MiB`, measured: diskWrite ? mb(diskWrite.median.mbPerSec) : 'error' });

  syntheticRows(figures, rows, target, pipeRate);
  cpuRows(figures.cpu ?? {}, rows, target, pipeRate);

  const tcpRatio = transport && rawTcp ? transport.median.mbPerSec / rawTcp : null;
  rows.push({
    figure: `transport: 1 KiB records, one connection (bench/transport.ts), ${formatCount(sizes.transportRecords)} records`,
    measured: transport ? mb(transport.median.mbPerSec) : 'error',
    baseline: rawTcp ? `raw TCP ${mb(rawTcp)}` : 'error',
    ratio: tcpRatio === null ? '' : x(tcpRatio),
    target: '>= 0.5x',
    result: target('transport >= 0.5x raw loopback TCP', tcpRatio, tcpRatio !== null && tcpRatio >= 0.5),
  });
  const tls = figures.tls;
  rows.push({
    figure: `transport with mutual TLS 1.3, 1 KiB records, one connection (bench/tls.ts; Flink with OpenSSL keeps about half), ${formatCount(sizes.tlsRecords)} records`,
    measured: tls ? mb(tls.tls.median.mbPerSec) : 'error',
    baseline: tls ? `plain TCP ${mb(tls.plain.median.mbPerSec)}` : 'error',
    ratio: tls ? x(tls.tls.median.mbPerSec / tls.plain.median.mbPerSec) : '',
  });

  wordCountRows(figures, rows, target);
  exampleRow(figures, rows, target);

  spillRows(figures, rows, target);
  recoveryRow(figures, rows, target);
  rows.push(...partitionRows(figures.partitions ?? {}, diskWrite, target));
  sweepRows(figures, rows, pipeRate);
  for (const { part, error } of errors) rows.push({ figure: `error in ${part}`, measured: error, result: 'ERROR' });
  return { table: renderTable(rows), targets };
}

export type Target = (name: string, value: number | null, pass: boolean) => 'PASS' | 'FAIL';

/** A section's table (`--only NAME`): the rows `build` gives, then what failed; the names of the targets missed. */
export function printRows(build: (rows: Row[], target: Target) => void, extra: readonly Row[] = []): string[] {
  const rows: Row[] = [];
  const missed: string[] = [];
  build(rows, (name, _value, pass) => {
    if (!pass) missed.push(name);
    return verdict(pass);
  });
  console.log(`\n${renderTable([...rows, ...extra])}\n\n${missed.length === 0 ? 'every target passes' : `missed: ${missed.join('; ')}`}`);
  return missed;
}

function recoveryRow({ recovery }: Figures, rows: Row[], target: Target): void {
  const ratio = recovery ? recovery.killed.median.seconds / recovery.undisturbed.median.seconds : null;
  const exact = recovery !== undefined && [...recovery.undisturbed.runs, ...recovery.killed.runs].every((r) => r.exact);
  const seconds = (r: WordCountRun): string => `${r.seconds.toFixed(2)} s (${mb(r.mbPerSec)})`;
  rows.push({
    figure: `recovery: blocking word count, ${recovery ? (recovery.killed.median.bytes / 1e6).toFixed(0) : '?'} MB, a TaskManager SIGKILLed halfway, restart delay ${RECOVERY_RESTART.delayMs} ms`,
    measured: recovery ? `${seconds(recovery.killed.median)}, ${exactness([...recovery.undisturbed.runs, ...recovery.killed.runs])}` : 'error',
    baseline: recovery ? `undisturbed ${seconds(recovery.undisturbed.median)}` : 'error',
    ratio: ratio === null ? '' : x(ratio),
    target: '<= 1.6x, exact',
    result: target('blocking word count with a TaskManager killed halfway <= 1.6x undisturbed, exact', ratio, ratio !== null && ratio <= 1.6 && exact),
  });
}

const exactness = (runs: readonly WordCountRun[]): string => {
  const wrong = runs.find((r) => !r.exact);
  return wrong ? `NOT exact: ${wrong.mismatch}` : 'exact';
};

function wordCountRows(figures: Figures, rows: Row[], target: Target): void {
  const { wordCount: wc, plainWordCount: plain, wordCountOneSlot: one, wordCountTwoSlots: two } = figures;
  const wcRatio = wc && plain ? wc.median.mbPerSec / plain.median.mbPerSec : null;
  const wcExact = wc !== undefined && wc.runs.every((r) => r.exact);
  rows.push({
    figure: `word count, ${plain ? (plain.median.bytes / 1e6).toFixed(0) : '?'} MB Zipf corpus, 2 TaskManagers of 1 slot, as a user times it`,
    measured: wc ? `${mb(wc.median.mbPerSec)}, ${exactness(wc.runs)}` : 'error',
    baseline: plain ? `plain ${mb(plain.median.mbPerSec)}` : 'error',
    ratio: wcRatio === null ? '' : x(wcRatio),
    target: '>= 2.5x, exact',
    result: target('word count (2 TaskManagers x 1 slot) >= 2.5x plain, exact counts', wcRatio, wcRatio !== null && wcRatio >= 2.5 && wcExact),
    rss: wc && rssCell(wc.taskManagers),
  });
  const slotRatio = one && two ? two.median.mbPerSec / one.median.mbPerSec : null;
  const slotsExact = one !== undefined && two !== undefined && [...one.runs, ...two.runs].every((r) => r.exact);
  rows.push({
    figure: 'word count, 1 TaskManager of 2 slots: parallelism 2 against 1',
    measured: two ? `${mb(two.median.mbPerSec)}, ${exactness([...(one?.runs ?? []), ...two.runs])}` : 'error',
    baseline: one ? `1 slot ${mb(one.median.mbPerSec)}` : 'error',
    ratio: slotRatio === null ? '' : x(slotRatio),
    target: '>= 1.7x, exact',
    result: target('word count with 2 slots >= 1.7x 1 slot, exact counts', slotRatio, slotRatio !== null && slotRatio >= 1.7 && slotsExact),
    rss: two && rssCell(two.taskManagers),
  });
  // The same runs as the JobManager times them: without the 50 ms steps of the polling client.
  const engine = (runs: readonly WordCountRun[]): number => median(runs.map((r) => r.engineSeconds));
  rows.push({
    figure: 'the same jobs timed by the JobManager, from start to end (no submission, no polling)',
    measured: two ? formatMs(engine(two.runs) * 1000) : 'error',
    baseline: one ? `1 slot ${formatMs(engine(one.runs) * 1000)}` : 'error',
    ratio: one && two ? x(engine(one.runs) / engine(two.runs)) : '',
  });
  const { bareOneThread: bare1, bareTwoThreads: bare2 } = figures;
  rows.push({
    figure: "baseline: the engine's tokenizer bare in warm worker threads, 2 threads against 1 (the machine's ceiling for the rows above)",
    measured: bare2 ? mb(bare2.median.mbPerSec) : 'error',
    baseline: bare1 ? `1 thread ${mb(bare1.median.mbPerSec)}` : 'error',
    ratio: bare1 && bare2 ? x(bare2.median.mbPerSec / bare1.median.mbPerSec) : '',
  });
}

function syntheticRows(figures: Figures, rows: Row[], target: Target, pipeRate: number | undefined): void {
  const { synthetic1x: one, synthetic10x: ten } = figures;
  const versusPipe = (run: SyntheticRun | undefined): Pick<Row, 'baseline' | 'ratio'> => ({
    baseline: pipeRate ? `ideal pipe ${recs(pipeRate)}` : 'error',
    ratio: run && pipeRate ? x(run.recordsPerSec / pipeRate) : '',
  });
  const pipelinedRatio = ten && pipeRate ? ten.median.recordsPerSec / pipeRate : null;
  rows.push({
    figure: `synthetic pipelined, ${ten ? formatCount(ten.median.records) : '?'} records`,
    measured: ten ? `${recs(ten.median.recordsPerSec)} (${mb(ten.median.mbPerSec)}, ${ten.median.seconds.toFixed(2)} s)` : 'error',
    ...versusPipe(ten?.median),
    target: '>= 0.7x',
    result: target('synthetic pipelined >= 0.7x ideal pipe', pipelinedRatio, pipelinedRatio !== null && pipelinedRatio >= 0.7),
    rss: ten && rssCell(ten.taskManagers),
  });
  const scaling = one && ten ? ten.median.seconds / one.median.seconds : null;
  rows.push({
    figure: `scaling: synthetic ${one ? formatCount(one.median.records) : '?'} -> ${ten ? formatCount(ten.median.records) : '?'} records (10x)`,
    measured: one && ten ? `${one.median.seconds.toFixed(2)} s -> ${ten.median.seconds.toFixed(2)} s` : 'error',
    ratio: scaling === null ? '' : `${x(scaling)} the time`,
    target: '<= 10.5x',
    result: target('10x the records take <= 10.5x the time', scaling, scaling !== null && scaling <= 10.5),
  });
  const limit = (memory: number): number => memory + RSS_HEADROOM + SLOTS * RSS_PER_SLOT;
  const worst = ten ? Math.max(...ten.taskManagers.map((tm) => tm.peakRss / limit(tm.memory))) : null;
  rows.push({
    figure: `memory: peak RSS of every TaskManager (${SLOTS} slots) during the 10x synthetic`,
    measured: ten ? rssCell(ten.taskManagers) : 'error',
    baseline: ten ? `network memory + 100 + 60 per slot = ${(limit(ten.taskManagers[0].memory) / MiB).toFixed(0)} MiB` : '',
    ratio: worst === null ? '' : x(worst),
    target: '<= 1.0x',
    result: target('peak RSS <= network memory + 100 MiB + 60 MiB per slot', worst, worst !== null && worst <= 1),
  });
}

/** The engine's own CPU per record of `synthetic` pipelined, at most (issue 31). */
const OWN_NS_TARGET = 150;
const BLOCKING_TARGET = 0.75;
const EXAMPLE_TARGET = 1.15;

/** The CPU rows; `pipeRate` null where no ideal pipe was measured (a section of its own), undefined where it failed. */
export function cpuRows({ packr, pipelined, blocking, combine }: CpuFigures, rows: Row[], target: Target, pipeRate: number | null | undefined): void {
  const baseNs = packr?.best.nsPerRecord;
  const ns = (value: number): string => `${value.toFixed(0)} ns`;
  rows.push({
    figure: `baseline: msgpackr alone, a default Packr packing and unpacking arrays of 1,000 x ${SYNTHETIC.recordSize} B records, one thread, CPU a record`,
    measured: baseNs === undefined ? 'error' : ns(baseNs),
  });
  const where = `2 TaskManagers of 1 slot, parallelism ${CPU_PARALLELISM}, fastest of ${pipelined?.runs.length ?? '?'}`;
  const cpuRow = (figure: string, run: CpuRun | undefined): Row => ({
    figure: `${figure}, ${where}: records/s and CPU of every cluster process a record`,
    measured: run ? `${recs(run.recordsPerSec)} (${mb(run.mbPerSec)}), ${ns(run.nsPerRecord)} CPU` : 'error',
    baseline: [baseNs === undefined ? 'msgpackr error' : `msgpackr ${ns(baseNs)}`, ...(pipeRate === null ? [] : [pipeRate ? `ideal pipe ${recs(pipeRate)}` : 'ideal pipe error'])].join('; '),
    ratio: run && baseNs !== undefined ? `own ${ns(run.nsPerRecord - baseNs)}${pipeRate ? `; ${x(run.recordsPerSec / pipeRate)}` : ''}` : '',
  });
  const p = pipelined?.best;
  const own = p && baseNs !== undefined ? p.nsPerRecord - baseNs : null;
  rows.push({
    ...cpuRow(`synthetic pipelined, ${p ? formatCount(p.records) : '?'} records`, p),
    target: `own <= ${OWN_NS_TARGET} ns`,
    result: target(`synthetic pipelined: the engine's own CPU a record <= ${OWN_NS_TARGET} ns (cluster CPU less msgpackr alone)`, own, own !== null && own <= OWN_NS_TARGET),
  });
  const b = blocking?.best;
  rows.push(cpuRow(`synthetic blocking, ${b ? formatCount(b.records) : '?'} records`, b));
  const blockingRatio = b && p ? b.recordsPerSec / p.recordsPerSec : null;
  rows.push({
    figure: `synthetic blocking against pipelined, ${where}`,
    measured: b ? recs(b.recordsPerSec) : 'error',
    baseline: p ? `pipelined ${recs(p.recordsPerSec)}` : 'error',
    ratio: blockingRatio === null ? '' : x(blockingRatio),
    target: `>= ${BLOCKING_TARGET}x`,
    result: target(`synthetic blocking >= ${BLOCKING_TARGET}x pipelined (2 TaskManagers of 1 slot)`, blockingRatio, blockingRatio !== null && blockingRatio >= BLOCKING_TARGET),
  });
  const c = combine?.best;
  rows.push(cpuRow(`combine, ${c ? formatCount(c.records) : '?'} [string, number] records over ${c ? formatCount(c.keys) : '?'} keys (${c ? formatCount(c.exchanged) : '?'} crossed the exchange)`, c));
}

function exampleRow({ example }: Figures, rows: Row[], target: Target): void {
  const ratio = example ? example.engine.median.seconds / example.own.median.seconds : null;
  const exact = example !== undefined && example.mismatch === undefined;
  const seconds = (r: ExampleRun): string => `${r.seconds.toFixed(2)} s (${mb(r.mbPerSec)})`;
  rows.push({
    figure: `examples/wordcount.ts, ${example ? (example.own.median.bytes / 1e6).toFixed(0) : '?'} MB, 2 TaskManagers of 1 slot, wall clock to the counts in hand`,
    measured: example ? `${seconds(example.engine.median)}, ${exact ? 'same counts' : `NOT the same counts: ${example.mismatch}`}` : 'error',
    baseline: example ? `its own code in 2 processes ${seconds(example.own.median)}` : 'error',
    ratio: ratio === null ? '' : `${x(ratio)} the time`,
    target: `<= ${EXAMPLE_TARGET}x`,
    result: target(`examples/wordcount.ts on 2 TaskManagers <= ${EXAMPLE_TARGET}x its own code in 2 processes, same counts`, ratio, ratio !== null && ratio <= EXAMPLE_TARGET && exact),
  });
}

/** The row of `npm run bench -- --only metrics` (bench/sections/Metrics.ts). */
export function scrapingRows(scraping: ScrapingFigures | undefined, rows: Row[], target: Target): void {
  const ratio = scraping ? scraping.scraped.median.recordsPerSec / scraping.unscraped.median.recordsPerSec : null;
  const scraped = scraping?.scraped.median;
  rows.push({
    figure: `synthetic pipelined, /metrics of every process scraped every second`,
    measured: scraped ? `${recs(scraped.recordsPerSec)} (${mb(scraped.mbPerSec)}), ${scraped.scrapes} scrapes` : 'error',
    baseline: scraping ? `unscraped ${recs(scraping.unscraped.median.recordsPerSec)} (${mb(scraping.unscraped.median.mbPerSec)})` : 'error',
    ratio: ratio === null ? '' : x(ratio),
    target: '>= 0.95x',
    result: target('synthetic scraped every second >= 0.95x unscraped', ratio, ratio !== null && ratio >= 0.95),
  });
}

function spillRows(figures: Figures, rows: Row[], target: Target): void {
  const { spill, diskWrite } = figures;
  const disk = diskWrite?.median.mbPerSec;
  const exact = spill !== undefined && spill.runs.every((r) => r.exact);
  const perTm = spill ? spill.median.bytesWritten / TASK_MANAGERS / spill.networkMemory : 0;
  rows.push({
    figure: `blocking synthetic, data ${perTm.toFixed(1)}x each TaskManager's ${spill ? (spill.networkMemory / MiB).toFixed(0) : '?'} MiB network memory`,
    measured: spill ? `${formatCount(spill.median.records)} records, ${spill.median.seconds.toFixed(2)} s, ${exact ? 'exact' : 'NOT exact'}` : 'error',
    target: 'completes exactly',
    result: target('blocking with 4x spill completes exactly', spill ? 1 : null, exact),
    rss: spill && rssCell(spill.taskManagers),
  });
  const writeRatio = spill && disk ? spill.median.writeMbPerSec / disk : null;
  rows.push({
    figure: 'spill write: producer phase (generate, serialize, spill)',
    measured: spill ? `${mb(spill.median.writeMbPerSec)} (${(spill.median.bytesWritten / 1e6).toFixed(0)} MB in ${spill.median.writeSeconds.toFixed(2)} s)` : 'error',
    baseline: disk ? `disk write ${mb(disk)}` : 'error',
    ratio: writeRatio === null ? '' : x(writeRatio),
    target: '>= 0.5x',
    result: target('spill write rate >= 0.5x sequential disk write', writeRatio, writeRatio !== null && writeRatio >= 0.5),
  });
  rows.push({
    figure: 'spill read: consumer phase (read back, send, count)',
    measured: spill ? `${mb(spill.median.readMbPerSec)} (${spill.median.readSeconds.toFixed(2)} s)` : 'error',
    baseline: disk ? `disk write ${mb(disk)}` : 'error',
    ratio: spill && disk ? x(spill.median.readMbPerSec / disk) : '',
  });
}

function sweepRows(figures: Figures, rows: Row[], pipeRate: number | undefined): void {
  for (const p of figures.sweep ?? []) {
    const l = p.latency;
    rows.push({
      figure: `sweep: ${p.bufferSize.replace(/kb$/i, ' KiB')} buffers, timeout ${p.bufferTimeoutMs} ms`,
      measured: `${recs(p.recordsPerSec)}; latency p50 ${formatMs(l.p50Ms)}, p99 ${formatMs(l.p99Ms)} (${l.samples} samples)`,
      baseline: pipeRate ? `ideal pipe ${recs(pipeRate)}` : '',
      ratio: pipeRate ? x(p.recordsPerSec / pipeRate) : '',
    });
  }
}

const COLUMNS: [keyof Row, string][] = [
  ['figure', 'figure'],
  ['measured', 'measured'],
  ['baseline', 'baseline (same run)'],
  ['ratio', 'ratio'],
  ['target', 'target'],
  ['result', 'result'],
  ['rss', 'TaskManager peak RSS'],
];

/** A Markdown table, padded so that it also reads well in a terminal. */
function renderTable(rows: readonly Row[]): string {
  const cells = rows.map((row) => COLUMNS.map(([key]) => (row[key] ?? '').replace(/\|/g, '\\|')));
  const widths = COLUMNS.map(([, title], c) => Math.max(title.length, 3, ...cells.map((r) => r[c].length)));
  const line = (values: string[]): string => `| ${values.map((v, c) => v.padEnd(widths[c])).join(' | ')} |`;
  return [line(COLUMNS.map(([, title]) => title)), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}


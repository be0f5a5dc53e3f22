/**
 * `npm run bench -- --only checkpoints [--quick]`: the figures issue 29 must show, each
 * beside its baseline from the same run (bench/checkpoints.ts measures them), the
 * checkpoints in a temporary folder removed after:
 *
 * - under backpressure, on 2 TaskManagers x 1 slot, checkpoints every second: aligned and
 *   unaligned checkpoints' p99 duration, beside the sink's rate without checkpoints;
 *   target unaligned p99 < 2 s. Quick runs it on 8 KiB network buffers (a quarter of the
 *   default), so that the full buffers drain, and checkpoints complete, within its time;
 * - then, on 3 TaskManagers x 1 slot (jobs at parallelism 2 take two; the third is the
 *   spare slot a restart moves to): nexmark-q5 with aligned checkpoints every 10 s
 *   (quick: 2 s, over shorter runs) at 0.9x or more of its events/s without, in turns;
 * - recovery: a TaskManager of paced nexmark-q5 SIGKILLed, the default restart strategy:
 *   ms from the kill until the job reads records again; target < 5 s.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runBackpressure, runQ5, runRecovery, type BackpressureRun, type BackpressureSetup, type RecoveryRun, type ThroughputRun } from '../checkpoints.js';
import { withCluster, type BenchCluster } from '../cluster.js';
import { alternateRuns, formatCount, formatMs, type Measured } from '../measure.js';
import type { BenchSection } from './Section.js';

const UNALIGNED_P99_MS = 2000;
const OVERHEAD_RATIO = 0.9;
const RECOVERY_MS = 5000;
/** Each q5 run's first seconds (JIT, the first windows' state) are not measured. */
const Q5_WARM_SECONDS = 3;

/** How long each part runs: long enough in full mode for several checkpoints of each kind. */
interface Plan {
  backpressure: BackpressureSetup;
  /** The backpressure cluster's network buffer size; the default without. */
  bufferSize?: string;
  baselineSeconds: number;
  q5IntervalMs: number;
  /** Each q5 run's measured span, s. */
  q5Seconds: number;
  q5Repeats: number;
  recovery: { rate: number; intervalMs: number; warmSeconds: number; measureSeconds: number };
}

const FULL: Plan = {
  backpressure: { rate: 100_000, fillSeconds: 15, measureSeconds: 60, timeoutMs: 45_000 },
  baselineSeconds: 15,
  q5IntervalMs: 10_000,
  q5Seconds: 40,
  q5Repeats: 2,
  recovery: { rate: 50_000, intervalMs: 1000, warmSeconds: 10, measureSeconds: 5 },
};

const QUICK: Plan = {
  backpressure: { rate: 100_000, fillSeconds: 5, measureSeconds: 10, timeoutMs: 10_000 },
  bufferSize: '8kb',
  baselineSeconds: 4,
  q5IntervalMs: 2000,
  q5Seconds: 6,
  q5Repeats: 1,
  recovery: { rate: 50_000, intervalMs: 1000, warmSeconds: 5, measureSeconds: 3 },
};

interface BackpressureFigures {
  setup: BackpressureSetup;
  baseline: BackpressureRun;
  aligned: BackpressureRun;
  unaligned: BackpressureRun;
  target: number;
  pass: boolean;
}

interface OverheadFigures {
  intervalMs: number;
  without: Measured<ThroughputRun>;
  with: Measured<ThroughputRun>;
  ratio: number;
  /** CPU per event without checkpoints over CPU per event with them. */
  cpuRatio: number;
  target: number;
  pass: boolean;
}

async function measureBackpressure(cluster: BenchCluster, plan: Plan): Promise<BackpressureFigures> {
  const setup = plan.backpressure;
  console.error('bench: slow sink without checkpoints');
  const baseline = await runBackpressure(cluster, 'none', { ...setup, measureSeconds: plan.baselineSeconds });
  console.error('bench: slow sink, aligned checkpoints');
  const aligned = await runBackpressure(cluster, 'aligned', setup);
  console.error('bench: slow sink, unaligned checkpoints');
  const unaligned = await runBackpressure(cluster, 'unaligned', setup);
  return { setup, baseline, aligned, unaligned, target: UNALIGNED_P99_MS, pass: unaligned.completed > 0 && unaligned.p99Ms < UNALIGNED_P99_MS };
}

async function measureOverhead(cluster: BenchCluster, plan: Plan): Promise<OverheadFigures> {
  console.error(`bench: nexmark-q5 for ${plan.q5Seconds} s, with and without checkpoints every ${plan.q5IntervalMs} ms`);
  const [without, withCheckpoints] = await alternateRuns(
    plan.q5Repeats,
    { measure: () => runQ5(cluster, Q5_WARM_SECONDS, plan.q5Seconds, null), key: (r) => r.eventsPerSec },
    { measure: () => runQ5(cluster, Q5_WARM_SECONDS, plan.q5Seconds, plan.q5IntervalMs), key: (r) => r.eventsPerSec },
  );
  const ratio = withCheckpoints.median.eventsPerSec / without.median.eventsPerSec;
  const cpuRatio = without.median.cpuSecondsPerMillion / withCheckpoints.median.cpuSecondsPerMillion;
  return { intervalMs: plan.q5IntervalMs, without, with: withCheckpoints, ratio, cpuRatio, target: OVERHEAD_RATIO, pass: ratio >= OVERHEAD_RATIO };
}

const verdict = (pass: boolean): string => (pass ? 'PASS' : 'FAIL');

function printBackpressure(f: BackpressureFigures, bufferSize = '32kb'): void {
  const { rate, measureSeconds, timeoutMs } = f.setup;
  console.log(`\nCheckpoints under backpressure: nexmark source at ${formatCount(rate)} events/s, rebalanced across 2 TaskManagers to a sink of a tenth of that, ${bufferSize} network buffers; every 1 s, timeout ${timeoutMs / 1000} s, over ${measureSeconds} s once the buffers are full`);
  console.log('mode        sink rec/s  completed  failed  p50         p99         max alignment  max in-flight');
  for (const r of [f.baseline, f.aligned, f.unaligned]) {
    const cells = r.mode === 'none' ? ['-', '-', '-', '-', '-', '-'] : [String(r.completed), String(r.failed), formatMs(r.p50Ms), formatMs(r.p99Ms), formatMs(r.maxAlignmentMs), `${(r.maxInFlightBytes / 1e6).toFixed(1)} MB (heap estimate)`];
    console.log(`${r.mode.padEnd(10)}  ${formatCount(r.sinkRecordsPerSec).padStart(10)}  ${cells[0].padStart(9)}  ${cells[1].padStart(6)}  ${cells[2].padEnd(10)}  ${cells[3].padEnd(10)}  ${cells[4].padEnd(13)}  ${cells[5]}`);
  }
  console.log(`target: unaligned p99 < ${f.target / 1000} s: ${verdict(f.pass)} (aligned p99 ${formatMs(f.aligned.p99Ms)}, ${f.aligned.failed} timed out)`);
}

function printOverhead(f: OverheadFigures): void {
  const run = (r: ThroughputRun): string => `${formatCount(r.eventsPerSec)} events/s, ${r.cpuSecondsPerMillion.toFixed(2)} CPU s per M events (${r.seconds.toFixed(1)} s, ${r.completed} checkpoints completed, ${r.failed} failed)`;
  console.log(`\nnexmark-q5, unbounded, unpaced, parallelism 2, ${f.without.median.seconds.toFixed(0)} s measured after ${Q5_WARM_SECONDS} s, median of ${f.without.runs.length} in turns`);
  console.log(`without checkpoints:                 ${run(f.without.median)}`);
  console.log(`aligned checkpoints every ${(f.intervalMs / 1000).toFixed(0).padStart(2)} s:      ${run(f.with.median)}`);
  console.log(`ratio ${f.ratio.toFixed(2)} (CPU per event ${f.cpuRatio.toFixed(2)}); target >= ${f.target}x: ${verdict(f.pass)}`);
}

function printRecovery(r: RecoveryRun, pass: boolean): void {
  console.log(`\nRecovery: nexmark-q5 paced at ${formatCount(r.rate)} events/s, aligned checkpoints every 1 s (${r.checkpointsBefore} completed before), ${r.killed} SIGKILLed, default restart strategy (1 s delay), a spare slot free on ${r.spare}`);
  console.log(`kill -> restart ${formatMs(r.restartMs)}, -> every task RUNNING ${formatMs(r.runningMs)}, -> records read again on ${r.spare} ${formatMs(r.recordsMs)} (its /metrics, up to 0.5 s late)`);
  console.log(`records/s past the source: ${formatCount(r.recordsPerSecBefore)} before the kill, ${formatCount(r.recordsPerSecAfter)} after; ${r.checkpointsAfter} checkpoints completed after the restore`);
  console.log(`target: records again < ${RECOVERY_MS / 1000} s after the kill: ${verdict(pass)}`);
}

export const CHECKPOINTS: BenchSection = {
  name: 'checkpoints',
  about: 'aligned and unaligned checkpoints under backpressure, nexmark-q5 with and without checkpoints, recovery after a SIGKILL',
  async run(quick) {
    const plan = quick ? QUICK : FULL;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-bench-checkpoints-'));
    try {
      const extraArgs = ['--checkpoint-dir', dir];
      const backpressure = await withCluster({ taskManagers: 2, slots: 1, bufferSize: plan.bufferSize, extraArgs }, (cluster) => measureBackpressure(cluster, plan));
      printBackpressure(backpressure, plan.bufferSize);
      return await withCluster({ taskManagers: 3, slots: 1, extraArgs }, async (cluster) => {
        const overhead = await measureOverhead(cluster, plan);
        printOverhead(overhead);
        const { rate, intervalMs, warmSeconds, measureSeconds } = plan.recovery;
        console.error('bench: nexmark-q5, a TaskManager SIGKILLed');
        const recovery = await runRecovery(cluster, rate, intervalMs, warmSeconds, measureSeconds);
        const recoveryPass = recovery.recordsMs < RECOVERY_MS;
        printRecovery(recovery, recoveryPass);
        return { backpressure: { ...backpressure, bufferSize: plan.bufferSize ?? '32kb' }, overhead, recovery: { ...recovery, target: RECOVERY_MS, pass: recoveryPass } };
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
};

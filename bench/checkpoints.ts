/**
 * The checkpoint figures of issue 29, each beside its baseline from the same run (the
 * section that prints them: bench/sections/Checkpoints.ts):
 *
 * - backpressure: bench/jobs/slow-sink.mjs (a paced Nexmark source, a sink at a tenth
 *   of its rate, a rebalance between TaskManagers), checkpoints every second, aligned
 *   and then unaligned: their durations as GET /jobs/:id/checkpoints gives them, from
 *   once every buffer is full;
 * - overhead: bounded nexmark-q5 with and without aligned checkpoints, in turns;
 * - recovery: unbounded nexmark-q5, paced, checkpoints on, a TaskManager running one of
 *   its subtasks SIGKILLed, a spare slot free, the default restart strategy.
 */
import fs from 'node:fs';
import path from 'node:path';
import { callJson } from '../src/rpc/HttpClient.js';
import type { CheckpointStats } from '../src/jobmanager/checkpoint/CheckpointStats.js';
import { JobState } from '../src/lifecycle/JobState.js';
import { TaskState } from '../src/lifecycle/TaskState.js';
import { taskManagerMetrics, type BenchCluster, type JobStatus, type SubmitBody } from './cluster.js';
import { percentile } from './measure.js';
import { packageRoot } from './results.js';

export const PARALLELISM = 2;
const POLL_MS = 50;
/** Past a checkpoint's timeout, the time its abort takes to show. */
const SETTLE_MARGIN_MS = 2000;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface CheckpointsView {
  counts: { completed: number; failed: number; inProgress: number };
  checkpoints: CheckpointStats[];
}

async function checkpointsOf(cluster: BenchCluster, id: string): Promise<CheckpointsView> {
  return callJson<CheckpointsView>('GET', `${cluster.url}/jobs/${id}/checkpoints`);
}

/** Fails with the job's own error unless it still runs. */
async function runningStatus(cluster: BenchCluster, id: string, what: string): Promise<JobStatus> {
  const status = await cluster.status(id);
  if (status.state !== JobState.RUNNING) throw new Error(`${what}: job ${id} is ${status.state}: ${status.error ?? 'no error given'}`);
  return status;
}

/** Records (or bytes) the tasks of `stage` have read so far, as the JobManager last heard. */
function readIn(status: JobStatus, stage: string, of: 'recordsIn' | 'bytesIn'): number {
  return status.tasks.filter((t) => t.stage === stage).reduce((sum, t) => sum + t.counters[of], 0);
}

export interface BackpressureRun {
  mode: 'aligned' | 'unaligned' | 'none';
  seconds: number;
  /** Records and bytes the slow stage read a second while measured. */
  sinkRecordsPerSec: number;
  sinkBytesPerSec: number;
  /** The checkpoints triggered while measured that completed, and those that failed (timed out). */
  completed: number;
  failed: number;
  /** Still in progress past their timeout's margin (none unless the JobManager is late to abort them). */
  unsettled: number;
  durationsMs: number[];
  p50Ms: number;
  p99Ms: number;
  maxAlignmentMs: number;
  /** The largest in-flight data one checkpoint stored (unaligned), bytes. */
  maxInFlightBytes: number;
  /** Distinct TaskManagers the job ran on (2: the rebalance crosses between them). */
  taskManagers: number;
}

export interface BackpressureSetup {
  /** Source events a second, over both source subtasks. */
  rate: number;
  /** Until every buffer between the stages is full, s. */
  fillSeconds: number;
  measureSeconds: number;
  /** Aligned checkpoints wait behind every full buffer: this long at most. */
  timeoutMs: number;
}

/** The slow-sink job for `measureSeconds` past its fill, with checkpoints every second in `mode` (none: the baseline). */
export async function runBackpressure(cluster: BenchCluster, mode: BackpressureRun['mode'], setup: BackpressureSetup): Promise<BackpressureRun> {
  const module = await cluster.upload(fs.readFileSync(path.join(packageRoot(), 'bench', 'jobs', 'slow-sink.mjs'), 'utf8'));
  const body: SubmitBody = {
    module,
    params: { rate: setup.rate, sinkRate: setup.rate / 10 / PARALLELISM },
    parallelism: PARALLELISM,
    // Every checkpoint that times out is counted and shown, and the job goes on.
    checkpoints: mode === 'none' ? undefined : { interval: 1000, mode, timeout: setup.timeoutMs, tolerableFailures: 1000 },
  };
  const id = await cluster.submit(body);
  try {
    await sleep(setup.fillSeconds * 1000);
    const before = await runningStatus(cluster, id, `slow sink (${mode})`);
    const from = Date.now();
    await sleep(setup.measureSeconds * 1000);
    const after = await runningStatus(cluster, id, `slow sink (${mode})`);
    const seconds = (Date.now() - from) / 1000;
    // Those triggered before the end may still complete: they count once they do, up to one timeout later.
    const stats = mode === 'none' ? [] : await settledCheckpoints(cluster, id, from, Date.now(), setup.timeoutMs + SETTLE_MARGIN_MS);
    const rates = { records: (readIn(after, 'slow', 'recordsIn') - readIn(before, 'slow', 'recordsIn')) / seconds, bytes: (readIn(after, 'slow', 'bytesIn') - readIn(before, 'slow', 'bytesIn')) / seconds };
    return summarizeBackpressure(mode, seconds, rates, stats, new Set(after.tasks.map((t) => t.taskManager)).size);
  } finally {
    await cluster.cancel(id).catch(() => undefined);
  }
}

/** The checkpoints triggered in [from, to), once none of them is in progress (or `waitMs` passed). */
async function settledCheckpoints(cluster: BenchCluster, id: string, from: number, to: number, waitMs: number): Promise<CheckpointStats[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const window = (await checkpointsOf(cluster, id)).checkpoints.filter((c) => c.triggered >= from && c.triggered < to && !c.savepoint);
    if (window.every((c) => c.status !== 'IN_PROGRESS') || Date.now() > deadline) return window;
    await sleep(250);
  }
}

function summarizeBackpressure(mode: BackpressureRun['mode'], seconds: number, rates: { records: number; bytes: number }, stats: CheckpointStats[], taskManagers: number): BackpressureRun {
  const completed = stats.filter((c) => c.status === 'COMPLETED');
  const durationsMs = completed.map((c) => c.durationMs ?? Number.NaN).sort((a, b) => a - b);
  const tasks = completed.flatMap((c) => Object.values(c.tasks));
  return {
    mode,
    seconds,
    sinkRecordsPerSec: rates.records,
    sinkBytesPerSec: rates.bytes,
    completed: completed.length,
    failed: stats.filter((c) => c.status === 'FAILED').length,
    unsettled: stats.filter((c) => c.status === 'IN_PROGRESS').length,
    durationsMs,
    p50Ms: percentile(durationsMs, 50),
    p99Ms: percentile(durationsMs, 99),
    maxAlignmentMs: Math.max(0, ...tasks.map((t) => t.alignmentMs)),
    maxInFlightBytes: Math.max(0, ...completed.map((c) => Object.values(c.tasks).reduce((sum, t) => sum + t.inFlightBytes, 0))),
    taskManagers,
  };
}

export interface ThroughputRun {
  checkpoints: boolean;
  events: number;
  seconds: number;
  eventsPerSec: number;
  /** CPU time of every cluster process while it ran, per million events: a figure the machine's other load moves less. */
  cpuSecondsPerMillion: number;
  /** Checkpoints completed while it ran (and failed). */
  completed: number;
  failed: number;
}

/**
 * Unbounded nexmark-q5, unpaced, with aligned checkpoints every `intervalMs` or none:
 * past `warmSeconds`, the events its sources emitted over `seconds` (counters as the
 * JobManager last heard them, at both ends alike), and the CPU every cluster process
 * spent meanwhile. A fixed span, not a fixed count, so that it takes its checkpoints
 * whatever the machine's load.
 */
export async function runQ5(cluster: BenchCluster, warmSeconds: number, seconds: number, intervalMs: number | null): Promise<ThroughputRun> {
  const checkpoints = intervalMs === null ? undefined : { interval: intervalMs, mode: 'aligned' as const };
  const id = await cluster.submit({ job: 'nexmark-q5', params: { sink: 'discard' }, parallelism: PARALLELISM, checkpoints });
  try {
    await sleep(warmSeconds * 1000);
    const emitted = (s: JobStatus): number => s.tasks.filter((t) => t.stage === 'events').reduce((sum, t) => sum + t.counters.recordsOut, 0);
    const before = await runningStatus(cluster, id, 'nexmark-q5');
    const countsBefore = intervalMs === null ? null : (await checkpointsOf(cluster, id)).counts;
    const cpu = cluster.cpuSeconds();
    const from = Date.now();
    await sleep(seconds * 1000);
    const after = await runningStatus(cluster, id, 'nexmark-q5');
    const cpuSeconds = cluster.cpuSeconds() - cpu;
    const elapsed = (Date.now() - from) / 1000;
    const countsAfter = intervalMs === null ? null : (await checkpointsOf(cluster, id)).counts;
    const events = emitted(after) - emitted(before);
    return {
      checkpoints: intervalMs !== null,
      events,
      seconds: elapsed,
      eventsPerSec: events / elapsed,
      cpuSecondsPerMillion: (cpuSeconds * 1e6) / events,
      completed: (countsAfter?.completed ?? 0) - (countsBefore?.completed ?? 0),
      failed: (countsAfter?.failed ?? 0) - (countsBefore?.failed ?? 0),
    };
  } finally {
    await cluster.cancel(id).catch(() => undefined);
  }
}

export interface RecoveryRun {
  rate: number;
  /** Checkpoints completed before the kill, and after the restore while it ran on. */
  checkpointsBefore: number;
  checkpointsAfter: number;
  killed: string;
  /** The TaskManager whose free slot the restart took. */
  spare: string;
  /**
   * Ms from the SIGKILL until: the JobManager restarted the job (a restart counted);
   * every task of the new attempts RUNNING; the restarted non-source tasks on the spare
   * TaskManager read records (its /metrics, at most 500 ms late).
   */
  restartMs: number;
  runningMs: number;
  recordsMs: number;
  /** Records the non-source tasks read a second before the kill and after the recovery, over equal spans. */
  recordsPerSecBefore: number;
  recordsPerSecAfter: number;
}

interface Timeline {
  restartMs: number;
  runningMs: number;
  recordsMs: number;
}

/**
 * Unbounded nexmark-q5 paced at `rate`, aligned checkpoints every `intervalMs`: once it
 * ran `warmSeconds` and completed a checkpoint, the TaskManager of its last subtask is
 * SIGKILLed, and the JobManager and the spare TaskManager are polled every 50 ms for the
 * restart. The spare's /metrics, not the JobManager's view, tells when records flow: the
 * JobManager hears counters only with heartbeats (every 1 s), up to 1.5 s late.
 */
export async function runRecovery(cluster: BenchCluster, rate: number, intervalMs: number, warmSeconds: number, measureSeconds: number): Promise<RecoveryRun> {
  const id = await cluster.submit({ job: 'nexmark-q5', params: { rate, sink: 'discard' }, parallelism: PARALLELISM, checkpoints: { interval: intervalMs, mode: 'aligned' } });
  try {
    await sleep(warmSeconds * 1000);
    await waitForCheckpoint(cluster, id, warmSeconds * 1000);
    const checkpointsBefore = (await checkpointsOf(cluster, id)).counts.completed;
    const recordsPerSecBefore = await nonSourceRate(cluster, id, measureSeconds);
    const status = await runningStatus(cluster, id, 'nexmark-q5 before the kill');
    const victim = status.tasks.find((t) => t.subtask === PARALLELISM - 1 && t.stage !== 'events')!.taskManager;
    const spare = (await cluster.taskManagerUrls()).find((tm) => !status.tasks.some((t) => t.taskManager === tm.id));
    if (spare === undefined) throw new Error('no spare TaskManager: the restart would wait for a new one');
    const killedAt = Date.now();
    await cluster.killTaskManager(victim);
    const timeline = await followRestart(cluster, id, status, spare.url, killedAt);
    const recordsPerSecAfter = await nonSourceRate(cluster, id, measureSeconds);
    const checkpointsAfter = (await checkpointsOf(cluster, id)).counts.completed - checkpointsBefore;
    return { rate, checkpointsBefore, checkpointsAfter, killed: victim, spare: spare.id, ...timeline, recordsPerSecBefore, recordsPerSecAfter };
  } finally {
    await cluster.cancel(id).catch(() => undefined);
  }
}

async function waitForCheckpoint(cluster: BenchCluster, id: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await checkpointsOf(cluster, id)).counts.completed === 0) {
    if (Date.now() > deadline) throw new Error(`nexmark-q5 completed no checkpoint in ${timeoutMs} ms`);
    await sleep(250);
  }
}

/** Records every non-source task read a second over `seconds`. */
async function nonSourceRate(cluster: BenchCluster, id: string, seconds: number): Promise<number> {
  const read = (s: JobStatus): number => s.tasks.filter((t) => t.stage !== 'events').reduce((sum, t) => sum + t.counters.recordsIn, 0);
  const before = await runningStatus(cluster, id, 'nexmark-q5');
  const from = Date.now();
  await sleep(seconds * 1000);
  const after = await runningStatus(cluster, id, 'nexmark-q5');
  return (read(after) - read(before)) / ((Date.now() - from) / 1000);
}

/** Records the job's non-source tasks on a TaskManager read, as its /metrics says. */
async function recordsReadOn(url: string, jobId: string): Promise<number> {
  let sum = 0;
  for (const line of (await taskManagerMetrics(url)).split('\n')) {
    if (!line.startsWith('spillway_task_records_in_total{') || !line.includes(`job="${jobId}"`) || line.includes('stage="events"')) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Polls the job and the spare TaskManager from the kill until the restarted tasks there read records; each moment is the first poll that saw it. */
async function followRestart(cluster: BenchCluster, id: string, before: JobStatus, spareUrl: string, killedAt: number): Promise<Timeline> {
  const attempts = new Map(before.tasks.map((t) => [t.id, t.attempt]));
  const deadline = killedAt + 60_000;
  let restartMs = Number.NaN;
  let runningMs = Number.NaN;
  for (;;) {
    await sleep(POLL_MS);
    const [status, read] = await Promise.all([runningStatus(cluster, id, 'nexmark-q5 after the kill'), recordsReadOn(spareUrl, id)]);
    const now = Date.now() - killedAt;
    if (Number.isNaN(restartMs) && status.restarts > before.restarts) restartMs = now;
    const allRunning = status.tasks.every((t) => t.attempt > attempts.get(t.id)! && t.state === TaskState.RUNNING);
    if (Number.isNaN(runningMs) && allRunning) runningMs = now;
    if (read > 0) return { restartMs, runningMs, recordsMs: now };
    if (Date.now() > deadline) throw new Error(`nexmark-q5 read no records on the spare TaskManager within 60 s of the kill (restart ${restartMs} ms, running ${runningMs} ms)`);
  }
}

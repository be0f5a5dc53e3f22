import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { DEFAULT_METRICS_RETENTION_MS } from '../ServerOptions.js';
import type { JobRecord } from './store/JobStore.js';
import { JobState } from '../lifecycle/JobState.js';
import type { TaskManagerInfo } from './cluster/TaskManagerRegistry.js';
import type { CheckpointStats, CheckpointSummary } from './checkpoint/CheckpointStats.js';

/** What the JobManager's metrics read when scraped. */
export interface JobManagerMetricsSource {
  jobs(): JobRecord[];
  taskManagers(): TaskManagerInfo[];
}

/** A series per job of its checkpoints (Flink's numberOfCompletedCheckpoints, lastCheckpointDuration, ...): its name, help and value; none while undefined. */
interface CheckpointSeries {
  name: string;
  help: string;
  value(summary: CheckpointSummary): number | undefined;
}

/** A figure of the latest completed checkpoint: a job has it once one completed. */
const last =
  (figure: (latest: CheckpointStats) => number) =>
  (summary: CheckpointSummary): number | undefined =>
    summary.latest === undefined ? undefined : figure(summary.latest);

const CHECKPOINT_COUNTERS: CheckpointSeries[] = [
  { name: 'spillway_job_checkpoints_completed_total', help: 'Checkpoints and savepoints of a job that completed', value: (s) => s.counts.completed },
  { name: 'spillway_job_checkpoints_failed_total', help: 'Checkpoints and savepoints of a job that failed or were aborted (declined, timed out, subsumed, the job restarted or ended)', value: (s) => s.counts.failed },
];

const CHECKPOINT_GAUGES: CheckpointSeries[] = [
  { name: 'spillway_job_checkpoints_in_progress', help: 'Checkpoints of a job under way (0 or 1)', value: (s) => s.counts.inProgress },
  { name: 'spillway_job_last_checkpoint_id', help: 'The id of the latest completed checkpoint of a job (as GET /jobs/:id/checkpoints shows it)', value: last((c) => c.id) },
  { name: 'spillway_job_last_checkpoint_duration_seconds', help: 'From trigger to completion of the latest completed checkpoint of a job', value: last((c) => (c.durationMs ?? 0) / 1000) },
  { name: 'spillway_job_last_checkpoint_size_bytes', help: 'Bytes of the state files of the latest completed checkpoint of a job', value: last((c) => c.bytes) },
  { name: 'spillway_job_last_checkpoint_alignment_seconds', help: 'The longest barrier alignment of a task in the latest completed checkpoint of a job', value: last((c) => c.alignmentMs / 1000) },
  { name: 'spillway_job_last_checkpoint_start_delay_seconds', help: 'The longest start delay (trigger to first barrier) of a task in the latest completed checkpoint of a job', value: last((c) => c.startDelayMs / 1000) },
  { name: 'spillway_job_last_checkpoint_persisted_in_flight_bytes', help: 'Bytes of in-flight buffers stored with the latest completed checkpoint of a job (unaligned)', value: last((c) => c.inFlightBytes) },
  { name: 'spillway_job_last_checkpoint_unaligned', help: 'Whether a task took the latest completed checkpoint of a job unaligned (1) or every task aligned (0)', value: last((c) => (c.unaligned ? 1 : 0)) },
];

/**
 * The JobManager's /metrics (Prometheus text, prom-client): the process's default
 * metrics, jobs by state, TaskManagers and slots, and one series per job naming its
 * state; an ended job's series goes `retentionMs` after it ended, so labels stay bounded.
 */
export class JobManagerMetrics {
  readonly registry = new Registry();

  constructor(source: JobManagerMetricsSource, retentionMs = DEFAULT_METRICS_RETENTION_MS) {
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    new Gauge<'state'>({
      name: 'spillway_jobs',
      help: 'Jobs the JobManager answers for, by state',
      labelNames: ['state'],
      registers,
      collect() {
        const jobs = source.jobs();
        for (const state of JobState.ALL) this.set({ state }, jobs.filter((job) => job.state === state).length);
      },
    });
    new Gauge<'job' | 'state'>({
      name: 'spillway_job_state',
      help: 'A job in its current state (1); ended jobs are kept for the metrics retention',
      labelNames: ['job', 'state'],
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        for (const job of source.jobs()) if (job.ended === undefined || now - job.ended <= retentionMs) this.set({ job: job.id, state: job.state }, 1);
      },
    });
    new Counter<'job'>({
      name: 'spillway_job_restarts_total',
      help: 'Times a job was restarted after a failure; ended jobs are kept for the metrics retention',
      labelNames: ['job'],
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        for (const job of source.jobs()) if (job.ended === undefined || now - job.ended <= retentionMs) this.inc({ job: job.id }, job.restarts ?? 0);
      },
    });
    this.checkpointSeries(source, retentionMs);
    new Gauge({
      name: 'spillway_taskmanagers',
      help: 'TaskManagers registered',
      registers,
      collect() {
        this.set(source.taskManagers().length);
      },
    });
    new Gauge<'state'>({
      name: 'spillway_slots',
      help: 'Task slots of the registered TaskManagers, by state',
      labelNames: ['state'],
      registers,
      collect() {
        const tms = source.taskManagers();
        const free = tms.reduce((sum, tm) => sum + tm.freeSlots, 0);
        this.set({ state: 'free' }, free);
        this.set({ state: 'used' }, tms.reduce((sum, tm) => sum + tm.slots, 0) - free);
      },
    });
  }

  /** A job's checkpoint counts and its latest completed checkpoint's figures, for jobs that take checkpoints, kept for the retention as the others. */
  private checkpointSeries(source: JobManagerMetricsSource, retentionMs: number): void {
    const registers = [this.registry];
    const summaries = (): [string, CheckpointSummary][] => {
      const now = Date.now();
      return source.jobs().flatMap((job) => (job.checkpoints !== undefined && (job.ended === undefined || now - job.ended <= retentionMs) ? [[job.id, job.checkpoints]] : []));
    };
    // A series set anew at each scrape: reset, then each job's figure added (as the counters above are).
    const collect = (value: CheckpointSeries['value']) =>
      function (this: Counter<'job'> | Gauge<'job'>): void {
        this.reset();
        for (const [job, summary] of summaries()) {
          const figure = value(summary);
          if (figure !== undefined) this.inc({ job }, figure);
        }
      };
    for (const { name, help, value } of CHECKPOINT_COUNTERS) new Counter<'job'>({ name, help, labelNames: ['job'], registers, collect: collect(value) });
    for (const { name, help, value } of CHECKPOINT_GAUGES) new Gauge<'job'>({ name, help, labelNames: ['job'], registers, collect: collect(value) });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

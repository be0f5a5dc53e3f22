import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { JobRecord } from './JobStore.js';
import type { JobState } from './Scheduler.js';
import type { TaskManagerInfo } from './TaskManagerRegistry.js';

/** How long an ended job's series stay in /metrics. */
export const DEFAULT_METRICS_RETENTION_MS = 300_000;

const JOB_STATES: readonly JobState[] = ['CREATED', 'RUNNING', 'FINISHED', 'FAILED', 'CANCELED'];

/** What the JobManager's metrics read when scraped. */
export interface JobManagerMetricsSource {
  jobs(): JobRecord[];
  taskManagers(): TaskManagerInfo[];
}

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
        for (const state of JOB_STATES) this.set({ state }, jobs.filter((job) => job.state === state).length);
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

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

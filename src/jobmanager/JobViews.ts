import { emptyCounters, type TaskCounters } from '../job/TaskDeployment.js';
import type { JobRecord } from './JobStore.js';
import type { Job } from './Scheduler.js';

/** The seq of job ids `job-0042-...`: the number the store keys a job by. */
export function jobSeq(id: string): number | undefined {
  const match = /^job-(\d+)-/.exec(id);
  return match ? Number(match[1]) : undefined;
}

/** A job as it stands, as the store keeps it and the REST API shows it. */
export function snapshot(job: Job): JobRecord {
  const vertices = [...(job.graph?.vertices.values() ?? [])];
  const counters: TaskCounters = emptyCounters();
  for (const v of vertices) {
    counters.recordsIn += v.counters.recordsIn;
    counters.bytesIn += v.counters.bytesIn;
    counters.recordsOut += v.counters.recordsOut;
    counters.bytesOut += v.counters.bytesOut;
    counters.spilledBytes += v.counters.spilledBytes;
  }
  let resultBytes = 0;
  for (const bytes of job.resultBytes.values()) resultBytes += bytes;
  return {
    seq: job.seq,
    id: job.id,
    name: job.name,
    state: job.state,
    error: job.error,
    parallelism: job.parallelism,
    exchange: job.exchange.name,
    compression: job.compression,
    submitted: job.submitted,
    started: job.started,
    ended: job.ended,
    ref: job.ref,
    counters,
    tasks: vertices.map((v) => ({
      id: v.taskId,
      stage: v.stage,
      subtask: v.subtask,
      taskManager: v.taskManagerId,
      attempt: v.attempt,
      state: v.state,
      error: v.error,
      counters: v.counters,
    })),
    edges: job.graph?.edges.map((e) => ({
      from: e.from,
      to: e.to,
      input: e.input,
      type: e.type.name,
      pipelined: e.type.isPipelined,
      reReadable: e.type.isReReadable,
      storage: e.type.storage,
      compression: e.compression,
    })),
    resultBytes,
    restarts: job.restarts,
    exceptions: job.exceptions,
  };
}

/** An entry of GET /jobs. */
export function summary(job: JobRecord): Record<string, unknown> {
  const { id, name, state, error, parallelism, exchange, submitted, started, ended } = job;
  const durationMs = started === undefined ? 0 : (ended ?? Date.now()) - started;
  return { id, name, state, error, parallelism, exchange, submitted, durationMs };
}

/** GET /jobs/:id. */
export function details(job: JobRecord): Record<string, unknown> {
  return {
    ...summary(job),
    started: job.started,
    ended: job.ended,
    counters: job.counters,
    compression: job.compression ?? false,
    edges: job.edges ?? [],
    tasks: job.tasks,
    progress: job.tasks.length === 0 ? 0 : job.tasks.filter((t) => t.state === 'FINISHED').length / job.tasks.length,
    resultBytes: job.resultBytes,
    resultsDropped: job.resultsDropped,
    restarts: job.restarts ?? 0,
  };
}

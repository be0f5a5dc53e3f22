import { sqlDetails } from '../../sql/SqlJob.js';
import { TaskState } from '../../lifecycle/TaskState.js';
import { emptyCounters, type TaskCounters } from '../../rpc/TaskDeployment.js';
import type { ExecutionEdge, ExecutionGraph } from '../scheduler/ExecutionGraph.js';
import type { CompressionCodec } from '../../network/buffer/CompressionCodec.js';
import type { EdgeView, JobRecord, TaskView } from '../store/JobStore.js';
import { eventTime, type EventTimeFigures } from './EventTimeView.js';
import type { Job } from './Job.js';
import type { TaskRates } from './TaskRates.js';

/** An entry of GET /jobs; `durationMs` from its start to its end, or to now while it runs (0 before it started). */
export type JobSummary = Pick<JobRecord, 'id' | 'name' | 'state' | 'error' | 'errorCode' | 'parallelism' | 'exchange' | 'submitted'> & { durationMs: number };

/** A task as GET /jobs/:id shows it: its rates beside its counters. */
export type TaskDetails = Omit<TaskView, 'rates'> & Partial<TaskRates>;

/** GET /jobs/:id: the summary, counters, exchanges and tasks; an unbounded job's event time; a SQL job's statement and plan. */
export type JobDetails = JobSummary & {
  started?: number;
  ended?: number;
  counters: TaskCounters;
  compression: CompressionCodec | false;
  edges: EdgeView[];
  tasks: TaskDetails[];
  /** The share of tasks FINISHED. */
  progress: number;
  resultBytes: number;
  resultsDropped?: string;
  restarts: number;
  bounded: boolean;
} & Partial<EventTimeFigures> &
  ReturnType<typeof sqlDetails>;

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
    counters.malformedRecords = (counters.malformedRecords ?? 0) + (v.counters.malformedRecords ?? 0);
    counters.sourceRecords = (counters.sourceRecords ?? 0) + (v.counters.sourceRecords ?? 0);
    counters.sourceBytes = (counters.sourceBytes ?? 0) + (v.counters.sourceBytes ?? 0);
  }
  let resultBytes = 0;
  for (const bytes of job.resultBytes.values()) resultBytes += bytes;
  return {
    seq: job.seq,
    id: job.id,
    name: job.name,
    state: job.state,
    error: job.failure?.message,
    errorCode: job.failure?.code,
    parallelism: job.parallelism,
    exchange: job.exchange.name,
    compression: job.compression ?? false,
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
      error: v.error?.message,
      errorCode: v.error?.code,
      started: v.started,
      ended: v.ended,
      counters: v.counters,
      rates: v.rates,
    })),
    edges: job.graph?.edges.map((edge) => edgeView(job.graph!, edge)),
    resultBytes,
    restarts: job.restarts,
    exceptions: job.exceptions,
    bounded: job.bounded,
    eventTime: job.bounded || job.graph === null ? undefined : eventTime(job.graph, job.watermarks, job.started ?? job.submitted),
    checkpoints: job.coordinator?.summary(),
  };
}

/**
 * An edge summed over its producer and consumer subtasks: records, bytes and their
 * rates as the producers wrote them, and where its buffers are now. A producer's
 * buffers handed out of its queues are in flight unless lent to a local consumer.
 */
function edgeView(graph: ExecutionGraph, edge: ExecutionEdge): EdgeView {
  const output = graph.edges.filter((e) => e.from === edge.from).indexOf(edge);
  const view: EdgeView = {
    from: edge.from,
    to: edge.to,
    input: edge.input,
    type: edge.type.name,
    pipelined: edge.type.isPipelined,
    reReadable: edge.type.isReReadable,
    storage: edge.type.storage,
    compression: edge.compression ?? false,
    records: 0,
    bytes: 0,
    recordsPerSecond: 0,
    bytesPerSecond: 0,
    buffers: { queued: 0, inFlight: 0, atConsumers: 0, spilled: 0 },
  };
  let handedOut = 0;
  let lentLocal = 0;
  for (const producer of graph.verticesOf(edge.from)) {
    const counters = producer.counters.outputs?.[output];
    view.records += counters?.records ?? 0;
    view.bytes += counters?.bytes ?? 0;
    const rate = producer.rates?.outputs[output];
    view.recordsPerSecond += rate?.recordsPerSecond ?? 0;
    view.bytesPerSecond += rate?.bytesPerSecond ?? 0;
    const buffers = producer.buffers?.outputs[output];
    view.buffers.queued += buffers?.queued ?? 0;
    view.buffers.spilled += buffers?.spilled ?? 0;
    handedOut += buffers?.handedOut ?? 0;
  }
  for (const consumer of graph.verticesOf(edge.to)) {
    const input = consumer.buffers?.inputs[edge.input];
    view.buffers.atConsumers += input?.lent ?? 0;
    lentLocal += input?.lentLocal ?? 0;
  }
  view.buffers.inFlight = Math.max(0, handedOut - lentLocal);
  return view;
}

/** An entry of GET /jobs. */
export function summary(job: JobRecord): JobSummary {
  const { id, name, state, error, errorCode, parallelism, exchange, submitted, started, ended } = job;
  const durationMs = started === undefined ? 0 : (ended ?? Date.now()) - started;
  return { id, name, state, error, errorCode, parallelism, exchange, submitted, durationMs };
}

/** GET /jobs/:id. */
export function details(job: JobRecord): JobDetails {
  return {
    ...summary(job),
    started: job.started,
    ended: job.ended,
    counters: job.counters,
    compression: job.compression ?? false,
    edges: job.edges ?? [],
    // Each task's ratios, backpressure level and output rates sit beside its counters.
    tasks: job.tasks.map(({ rates, ...task }) => ({ ...task, ...rates })),
    progress: job.tasks.length === 0 ? 0 : job.tasks.filter((t) => t.state === TaskState.FINISHED).length / job.tasks.length,
    resultBytes: job.resultBytes,
    resultsDropped: job.resultsDropped,
    restarts: job.restarts ?? 0,
    bounded: job.bounded ?? true,
    ...(job.eventTime === undefined ? {} : job.eventTime),
    ...sqlDetails(job.ref),
  };
}

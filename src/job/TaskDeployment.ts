import type { CompressionCodec } from '../network/buffer/CompressionCodec.js';

/** A partition type by the name it is registered under. */
export type PartitionTypeName = string;

/** Where a partition lives: a TaskManager and its data port. */
export interface PartitionLocation {
  taskManagerId: string;
  host: string;
  dataPort: number;
}

/** Which job code a task runs: a built-in by name, or an uploaded module by content hash. */
export interface JobReference {
  builtin?: string;
  module?: string;
  params: Record<string, unknown>;
}

/** One input edge of a task: a channel per producer subtask, reading this task's subpartition. */
export interface InputGateDescriptor {
  exchange: PartitionTypeName;
  channels: { partitionId: string; subpartition: number; location: PartitionLocation | null }[];
}

/** One output edge of a task: the partition it fills for the consuming stage. */
export interface OutputDescriptor {
  partitionId: string;
  consumerStage: string;
  /** Which input of the consuming stage this edge is. */
  consumerInput: number;
  numSubpartitions: number;
  type: PartitionTypeName;
  /** The codec of its buffers (asked for, and its type allows it), or null. */
  compression: CompressionCodec | null;
}

/** One run of one subtask: its task id and attempt, as a TaskManager keys its tasks and the JobManager addresses them. */
export function executionId(taskId: string, attempt: number): string {
  return `${taskId}#${attempt}`;
}

/** Everything a TaskManager needs to run one subtask. */
export interface TaskDeploymentDescriptor {
  jobId: string;
  taskId: string;
  /** Which run of the subtask, from 0: reports name it, and one of an earlier attempt is ignored. */
  attempt: number;
  stage: string;
  subtask: number;
  /** The stage's parallelism. */
  parallelism: number;
  /** The job's parallelism, which the job definition was validated with. */
  jobParallelism: number;
  job: JobReference;
  inputs: InputGateDescriptor[];
  outputs: OutputDescriptor[];
  bufferTimeout: number;
}

export type TaskState = 'DEPLOYING' | 'RUNNING' | 'FINISHED' | 'FAILED' | 'CANCELED';

/** A task's state as its TaskManager reports it to the JobManager. */
export interface TaskStateReport {
  state: TaskState;
  attempt: number;
  error?: string;
  counters?: TaskCounters;
  /** When the task reached this state, by its TaskManager's clock (epoch ms); the JobManager's time of receipt without it. */
  at?: number;
}

export interface TaskCounters {
  recordsIn: number;
  bytesIn: number;
  recordsOut: number;
  bytesOut: number;
  /**
   * Where the task's time went since it started, ms, as Flink splits it: waiting for
   * an output buffer (backpressured), waiting for input (idle), the rest (busy).
   */
  busyMs?: number;
  backPressuredMs?: number;
  idleMs?: number;
  /** Records and bytes written to each output edge, in the order of the deployment's outputs. */
  outputs?: { records: number; bytes: number }[];
  /** Bytes the task's operators wrote to spill files past their managed memory. */
  spilledBytes: number;
}

/** Counters of a task that has done nothing yet. */
export function emptyCounters(): TaskCounters {
  return { recordsIn: 0, bytesIn: 0, recordsOut: 0, bytesOut: 0, spilledBytes: 0 };
}

import type { SerializedError } from '../errors/Errors.js';
import type { TaskEndState, TaskState } from '../lifecycle/TaskState.js';
import type { CompressionCodec } from '../network/buffer/CompressionCodec.js';
import type { SnapshotHandle } from '../runtime/checkpoint/SnapshotFile.js';
import type { LatencyFigures } from '../runtime/time/LatencySamples.js';

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

/**
 * The partitions a gate reads, as a deployment carries them (Flink's cached, compressed
 * shuffle descriptors): one for every consumer of the same producers, built once on the
 * JobManager and shared. Producer subtask `first + i` wrote partition
 * `${prefix}${first + i}/${attempt}`; attempts and locations go as runs, since producers
 * sit on TaskManagers in contiguous blocks and restart by regions: an all-to-all edge
 * of 10,000 producers on 1,000 TaskManagers is about 2,000 numbers, not 10,000 objects.
 */
export interface ConsumedPartitionGroup {
  /** `${jobId}/${edgeIndex}/`. */
  prefix: string;
  /** The first producer subtask, and how many follow it. */
  first: number;
  count: number;
  /** Runs of `[attempt, length]`, covering `count` producers. */
  attempts: number[];
  /** The distinct locations, referred to by index. */
  locations: PartitionLocation[];
  /** Runs of `[index into locations, or -1 while not known, length]`. */
  at: number[];
}

/** A ConsumedPartitionGroup whose JSON passed DEFLATE_GROUP_BYTES: that JSON deflated, in base64. */
export interface DeflatedGroup {
  deflated: string;
}

/** One input edge of a task as a deployment carries it: the subpartition it reads of every partition of its group. */
export interface InputGateMessage {
  exchange: PartitionTypeName;
  subpartition: number;
  /** Shared by every consumer of the same producers (the same object on the JobManager); deflated past a size. */
  group: ConsumedPartitionGroup | DeflatedGroup;
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
  /** The job takes checkpoints: where the task writes its state, and how it aligns. */
  checkpoints?: TaskCheckpointConfig;
  /** Restoring from a checkpoint or savepoint: its id, the stage's parallelism then, and its state files by subtask then. */
  restore?: TaskRestore;
}

/** A TaskDeploymentDescriptor as it travels: its gates as groups (`expandDeployment` makes the descriptor of it). */
export type TaskDeploymentMessage = Omit<TaskDeploymentDescriptor, 'inputs'> & { inputs: InputGateMessage[] };

/** How a task of a job with checkpoints takes part in them. */
export interface TaskCheckpointConfig {
  /** Where checkpoints are written: `<directory>/<jobId>/chk-<id>/` (a savepoint's folder is the one asked for). */
  directory: string;
  /** Ms an aligned checkpoint may wait for its barriers before it goes unaligned. */
  alignmentTimeout?: number;
}

/** What a task tells the JobManager of a checkpoint it took part in. */
export interface CheckpointAck {
  checkpointId: number;
  handle: SnapshotHandle;
  /** Ms from its first barrier to its snapshot: until the last came (aligned), or until the alignment timed out; 0 at a source, about 0 unaligned. */
  alignmentMs: number;
  /** Ms from the checkpoint's trigger until the task's first barrier came (at a source: the trigger). */
  startDelayMs: number;
  /** Bytes of the in-flight buffers whose records it stored (unaligned). */
  inFlightBytes: number;
  unaligned: boolean;
  /** A source's position at the checkpoint: its held splits (the JobManager hands them out again on a restore). */
  sourcePosition?: unknown;
}

/** What a task restores from: a checkpoint's id and the state files of its stage. */
export interface TaskRestore {
  checkpointId: number;
  /** The stage's parallelism when the checkpoint was taken (another: the state is shared out anew). */
  parallelism: number;
  /** Each subtask's state file then; null for a subtask that had none. */
  handles: (SnapshotHandle | null)[];
}

/** A task's state as its TaskManager reports it to the JobManager. */
export interface TaskStateReport {
  state: TaskState.RUNNING | TaskEndState;
  attempt: number;
  /** Why a FAILED attempt failed, with its code. */
  error?: SerializedError;
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
  /** Records its source read (handed to the chain) and bytes of input it read; 0 in a task without a source, absent from a TaskManager that predates them. */
  sourceRecords?: number;
  sourceBytes?: number;
  /** Records its source skipped as malformed (`onError: 'skip'`); absent from a TaskManager that predates it. */
  malformedRecords?: number;
  /** In an unbounded job: the task's input watermark (event time, ms), null before the first. */
  watermark?: number | null;
  /** In an unbounded job: records its window operators dropped as late. */
  lateRecordsDropped?: number;
  /** In an unbounded job: bytes of state (keyed state, windows, timers) the task holds, estimated. */
  stateBytes?: number;
  /** At a sink of an unbounded job: the latency of latency markers from their sources, ms, over the latest samples. */
  latency?: LatencyFigures;
  /** At a sink of an unbounded job: how long watermarks took from their assigner, ms (a window's results come before the watermark that fired it). */
  watermarkLatency?: LatencyFigures;
}

/** Counters of a task that has done nothing yet. */
export function emptyCounters(): TaskCounters {
  return { recordsIn: 0, bytesIn: 0, recordsOut: 0, bytesOut: 0, spilledBytes: 0, malformedRecords: 0, sourceRecords: 0, sourceBytes: 0 };
}

/** One split of a source's input, as its supply made it (a byte range of a file, a row group, a stream): JSON the reader understands. */
export type Split = unknown;

import type { SerializedError } from '../../errors/Errors.js';
import type { ValidatedJob } from '../../job/ValidatedJob.js';
import { JobState } from '../../lifecycle/JobState.js';
import type { CompressionCodec } from '../../network/buffer/CompressionCodec.js';
import type { PartitionType } from '../../network/networkThread/partition/PartitionType.js';
import type { JobReference, Split } from '../../rpc/TaskDeployment.js';
import type { CheckpointCoordinator } from '../checkpoint/CheckpointCoordinator.js';
import type { CheckpointMetadata } from '../checkpoint/CheckpointMetadata.js';
import type { CheckpointOptions } from '../checkpoint/CheckpointOptions.js';
import type { WatermarkProgress } from './EventTimeView.js';
import type { ExecutionGraph } from '../scheduler/ExecutionGraph.js';
import type { RestartStrategy } from '../failover/RestartStrategy.js';
import type { SplitAssigner } from '../../connectors/SplitAssigner.js';
import type { JobException } from './JobException.js';

export type { JobException };

/** A job as submitted: what to run, how wide, over which exchanges, and how to restart. */
export interface JobSubmission {
  name: string;
  /** Its definition, validated once at submission: the execution graph is built from it. */
  validated: ValidatedJob;
  ref: JobReference;
  parallelism: number;
  /** The default type of its edges. */
  exchange: PartitionType;
  /** The default codec of its edges, or null: none. */
  compression: CompressionCodec | null;
  bufferTimeout: number;
  restart: RestartStrategy;
  /** Its checkpoints, if it takes them. */
  checkpoints?: CheckpointOptions & { directory: string };
  /** The savepoint (or retained checkpoint) it starts from, checked against its topology. */
  savepoint?: CheckpointMetadata;
  /**
   * The least id of its checkpoints (with HA: the leader's epoch times 2^32, plus 1), so
   * that ids never repeat across leaders and a later leader's are larger: no folder,
   * pending file or sink commit of one leader's checkpoint is taken for another's.
   */
  firstCheckpointId?: number;
  /**
   * The first attempt of each of its subtasks (with HA: the leader's epoch times 2^20), so
   * that a task a new leader deploys is never taken for one an earlier leader deployed that
   * still runs: their hidden sink files, partitions and executions have different names.
   */
  firstAttempt?: number;
}

/** Regions reset for a restart, deployed again once the restart delay passed and their slots are on live TaskManagers. */
export interface PendingRestart {
  /**
   * A restart (counted, after its delay), not a deployment that waits for a suspect
   * TaskManager's check or for slots: a failure during such a wait is a restart of its own.
   */
  restart: boolean;
  /** When the delay passed, and since when slots have been waited for; null while the delay runs. */
  since: number | null;
  timer: NodeJS.Timeout | null;
}

/** A submitted job through its life. Its state moves only by `moveJob`. */
export interface Job extends JobSubmission {
  id: string;
  /** Its number: the store's key. */
  seq: number;
  state: JobState;
  /** Why it failed, with its code. */
  failure?: SerializedError;
  submitted: number;
  started?: number;
  ended?: number;
  /** Its execution graph once its slots are taken. */
  graph: ExecutionGraph | null;
  /** Its execution graph since the first scheduling pass that found TaskManagers, placed again at each while its slots are short. */
  plan: ExecutionGraph | null;
  /** Bytes of collected records stored, by task index; the records themselves are in the store. */
  resultBytes: Map<number, number>;
  deployedRegions: Set<number>;
  /** Restarts so far (each may restart several regions). */
  restarts: number;
  exceptions: JobException[];
  pending: PendingRestart | null;
  /** Each source's splits, handed out as its subtasks ask; by stage, made at the first ask. */
  splits: Map<string, SplitAssigner<Split>>;
  /** Whether every source of the job ends; an unbounded job runs until it is canceled. */
  bounded: boolean;
  /** When each stage's watermark last moved (an unbounded job's). */
  watermarks: WatermarkProgress;
  /** Its checkpoint coordinator, once it runs, if it takes checkpoints. */
  coordinator: CheckpointCoordinator | null;
}

/** The id of job number `seq` submitted at `submitted` (epoch ms). */
export function jobIdFor(seq: number, submitted: number): string {
  return `job-${String(seq).padStart(4, '0')}-${submitted.toString(36)}`;
}

/** A new job, CREATED, numbered `seq`. */
export function createJob(seq: number, submission: JobSubmission, now = Date.now()): Job {
  return {
    ...submission,
    id: jobIdFor(seq, now),
    seq,
    state: JobState.CREATED,
    submitted: now,
    graph: null,
    plan: null,
    resultBytes: new Map(),
    deployedRegions: new Set(),
    restarts: 0,
    exceptions: [],
    pending: null,
    splits: new Map(),
    bounded: submission.validated.bounded,
    watermarks: new Map(),
    coordinator: null,
  };
}

/** Moves a job to `to`; throws SPW_ERR_ILLEGAL_STATE_TRANSITION if JobState does not join the two. */
export function moveJob(job: Job, to: JobState): void {
  job.state = JobState.transition(job.state, to, job.id);
}

/** The job a task id (`<job id>.<stage>.<subtask>`) belongs to. */
export function jobIdOf(taskId: string): string {
  return taskId.slice(0, taskId.indexOf('.'));
}

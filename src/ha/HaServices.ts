import type { ErrorCode } from '../errors/Errors.js';
import type { JobRecord } from '../jobmanager/store/JobStore.js';
import type { LeaderElection } from './LeaderElection.js';

/** A submitted job as the job store keeps it: enough for a new leader to run it again under its id. */
export interface StoredJob {
  id: string;
  seq: number;
  /** When it was first submitted (epoch ms): its id is made from it and its number. */
  submitted: number;
  /** The POST /jobs body, with the parallelism it was given. */
  body: Record<string, unknown>;
}

/** A completed checkpoint as the store keeps it: a pointer to its `_metadata` in the shared checkpoint folder, and that file's checksum. */
export interface CheckpointPointer {
  jobId: string;
  id: number;
  folder: string;
  checksum: string;
  savepoint: boolean;
}

/** How a job ended, as the job result store keeps it: a job with a result is never run again. */
export interface JobResult {
  jobId: string;
  state: string;
  ended: number;
  errorCode?: ErrorCode;
  /** The job as the leader that ended it showed it, so that any later leader lists it as it ended. */
  record?: JobRecord;
}

/**
 * Everything a JobManager of a cluster shares with the others (Flink's
 * HighAvailabilityServices): leader election and retrieval, the job store, the
 * completed-checkpoint store and its id counter, the job result store and savepoint
 * records. Writes a leader makes are compare-and-set on its fencing epoch: a leader
 * whose epoch is no longer the store's writes nothing (SPW_ERR_FENCED).
 */
export interface HaServices {
  /** `none`: one JobManager, nothing shared; `postgres`: the cluster's rows in PostgreSQL. */
  readonly kind: 'none' | 'postgres';
  /** The election this JobManager contends in; null without HA (it leads alone, at epoch 0, for ever). */
  readonly election: LeaderElection | null;
  /** A new job's number, unique in the cluster across leaders. */
  nextJobSeq(): Promise<number>;
  /** Stores a job submitted under `epoch`. */
  putJob(epoch: number, job: StoredJob): Promise<void>;
  /** Every stored job that has no result yet, by number. */
  unfinishedJobs(): Promise<StoredJob[]>;
  /** Stores an uploaded module's source, by its hash. */
  putModule(hash: string, source: string): Promise<void>;
  /** An uploaded module's source, if stored. */
  module(hash: string): Promise<string | undefined>;
  /** Records a completed checkpoint, if `epoch` still leads; SPW_ERR_FENCED otherwise. */
  addCheckpoint(epoch: number, pointer: CheckpointPointer): Promise<void>;
  /** A job's recorded checkpoints, oldest first. */
  checkpoints(jobId: string): Promise<CheckpointPointer[]>;
  /** Forgets a checkpoint deleted past its retention. */
  removeCheckpoint(jobId: string, id: number): Promise<void>;
  /** Records how a job ended, if `epoch` still leads; its job and checkpoint rows go. */
  putResult(epoch: number, result: JobResult): Promise<void>;
  /** How a job ended, if it did. */
  result(jobId: string): Promise<JobResult | undefined>;
  /** The `limit` jobs that ended last, the latest first, with their records. */
  results(limit: number): Promise<JobResult[]>;
  close(): Promise<void>;
}

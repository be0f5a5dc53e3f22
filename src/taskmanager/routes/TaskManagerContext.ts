import type { SpillwayError } from '../../errors/Errors.js';
import type { TaskManagerStatus } from '../../rpc/ControlPlane.js';
import type { PartitionLocation, TaskDeploymentMessage } from '../../rpc/TaskDeployment.js';
import type { TaskHost } from '../TaskHost.js';
import type { TaskManagerMetrics } from '../TaskManagerMetrics.js';

/** What the TaskManager's route plugins serve from (the routes of TASKMANAGER_ROUTES, src/rpc/ControlPlane.ts). */
export interface TaskManagerContext {
  /** This TaskManager's id with the JobManager now ('' before it registered). */
  id(): string;
  /** Running tasks by execution id (task id and attempt). */
  readonly tasks: ReadonlyMap<string, TaskHost>;
  /**
   * Starts a task attempt once the tasks of older leaders have stopped; resolves when it is
   * started, before it runs. SPW_ERR_TASK_DEPLOYED if that attempt runs here already.
   */
  deploy(descriptor: TaskDeploymentMessage): Promise<void>;
  /** Tells attempt `executionId` where a partition it reads is, or keeps that until the attempt is created. */
  updatePartition(executionId: string, partitionId: string, location: PartitionLocation): void;
  /** Remembers that a job was canceled: a deployment of it that arrives late does not start. */
  jobCanceled(jobId: string): void;
  /** Releases the partitions whose id `which` takes, failing their readers with `cause`. */
  releasePartitions(which: (partitionId: string) => boolean, cause: SpillwayError): void;
  /** What this TaskManager holds now. */
  status(): TaskManagerStatus;
  readonly metrics: TaskManagerMetrics;
}

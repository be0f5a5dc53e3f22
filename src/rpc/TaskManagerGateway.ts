import type { Barrier } from '../network/Events.js';
import { TASKMANAGER_ROUTES as TM, type Registration, type TaskManagerStatus } from './ControlPlane.js';
import type { Fence } from '../ha/Fence.js';
import { callRoute } from './HttpClient.js';
import type { PartitionLocation, TaskDeploymentMessage } from './TaskDeployment.js';

const NONE = {};

/** The header every JobManager-to-TaskManager message carries its sender's fencing epoch in. */
export const EPOCH_HEADER = 'x-spillway-epoch';

/**
 * One TaskManager as the JobManager calls it: one method a control message (the
 * routes of TASKMANAGER_ROUTES). Each rejects with an HttpError when the TaskManager
 * refuses (with its code), or with undici's error when it cannot be reached: the
 * JobManager then checks it (TaskManagerRegistry.suspect). With a fence, every message
 * carries the leader's epoch (EPOCH_HEADER), and none but `status` is sent once this
 * JobManager no longer leads on its own clock (SPW_ERR_FENCED).
 */
export class TaskManagerGateway {
  /** The TaskManager's base URL. */
  readonly url: string;

  constructor(
    taskManager: Pick<Registration, 'host' | 'httpPort' | 'https'>,
    private readonly fence?: Fence,
  ) {
    this.url = taskManagerUrl(taskManager);
  }

  /** The headers of an act of a leader: its epoch; SPW_ERR_FENCED once it leads no more. */
  private acting(what: string): { headers: Record<string, string> } {
    const fence = this.fence;
    if (fence === undefined) return { headers: {} };
    fence.check(what);
    return { headers: { [EPOCH_HEADER]: String(fence.epoch) } };
  }

  /** Deploys a task attempt; resolves once accepted, before it runs. */
  async deployTask(descriptor: TaskDeploymentMessage): Promise<void> {
    await callRoute(this.url, TM.deployTask, { params: NONE, body: descriptor }, this.acting('deploy a task'));
  }

  /** Tells the task attempt `executionId` where a partition it reads is. */
  async updatePartition(executionId: string, partitionId: string, location: PartitionLocation): Promise<void> {
    await callRoute(this.url, TM.updatePartition, { params: { executionId }, body: { partitionId, location } }, this.acting('announce a partition'));
  }

  /** Triggers a checkpoint at the source task attempt `executionId`. */
  async triggerCheckpoint(executionId: string, barrier: Barrier): Promise<void> {
    await callRoute(this.url, TM.triggerCheckpoint, { params: { executionId }, body: barrier }, this.acting('trigger a checkpoint'));
  }

  /** Tells every task of a job here that checkpoint `id` completed (its sinks commit) or was aborted. */
  async notifyCheckpoint(jobId: string, id: number, completed: boolean): Promise<void> {
    await callRoute(this.url, TM.notifyCheckpoint, { params: { jobId, id: String(id) }, body: { completed } }, this.acting('notify a checkpoint'));
  }

  /** Cancels one task attempt; resolves once it has ended. */
  async cancelTask(executionId: string): Promise<void> {
    await callRoute(this.url, TM.cancelTask, { params: { executionId }, body: {} }, this.acting('cancel a task'));
  }

  /** Cancels every task of a job; resolves once they have ended. */
  async cancelJob(jobId: string): Promise<void> {
    await callRoute(this.url, TM.cancelJob, { params: { jobId }, body: {} }, this.acting('cancel a job'));
  }

  /** Releases the listed partitions of a job, or every one of them without a list. */
  async releasePartitions(jobId: string, partitions?: string[]): Promise<void> {
    await callRoute(this.url, TM.releasePartitions, { params: { jobId }, body: partitions ? { partitions } : {} }, this.acting('release partitions'));
  }

  /** What the TaskManager holds now; rejects past `timeoutMs`. */
  status(timeoutMs?: number): Promise<TaskManagerStatus> {
    return callRoute(this.url, TM.status, { params: NONE }, { timeoutMs, headers: this.fence ? { [EPOCH_HEADER]: String(this.fence.epoch) } : {} });
  }
}

/** The base URL of a TaskManager's REST API; an IPv6 address goes in brackets. */
export function taskManagerUrl(tm: Pick<Registration, 'host' | 'httpPort' | 'https'>): string {
  const host = tm.host.includes(':') ? `[${tm.host}]` : tm.host;
  return `${tm.https ? 'https' : 'http'}://${host}:${tm.httpPort}`;
}

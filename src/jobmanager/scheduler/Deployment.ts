import { codeOf, type SerializedError } from '../../errors/Errors.js';
import { JobState } from '../../lifecycle/JobState.js';
import { TaskState } from '../../lifecycle/TaskState.js';
import { HttpError } from '../../rpc/HttpClient.js';
import { executionId, type PartitionLocation } from '../../rpc/TaskDeployment.js';
import { log } from '../../Logger.js';
import type { ExecutionGraph } from './ExecutionGraph.js';
import type { ExecutionVertex } from './ExecutionVertex.js';
import type { Job } from '../jobs/Job.js';
import type { PartitionTracker } from './PartitionTracker.js';
import { relocateSlots } from './SlotAllocation.js';
import type { TaskManagerInfo, TaskManagerRegistry } from '../cluster/TaskManagerRegistry.js';

/**
 * The JobManager's calls to TaskManagers for a job: deploying each pipelined region once
 * the partitions it reads are ready, telling running consumers where a ready partition
 * is, stopping a restarted attempt, and stopping an ended job. A call that cannot reach
 * a TaskManager has it checked (TaskManagerRegistry.suspect); a refusal is logged, or,
 * for a deployment, fails the attempt (`refused`).
 */
export class Deployment {
  constructor(
    private readonly registry: TaskManagerRegistry,
    private readonly tracker: PartitionTracker,
    /** A TaskManager refused attempt `attempt` of `vertex` (it answered with an error). */
    private readonly refused: (vertex: ExecutionVertex, attempt: number, error: SerializedError) => void,
  ) {}

  /**
   * Deploys every region of the job whose inputs are ready and that is not deployed.
   * While a TaskManager of the job is checked, or a slot of it is on a gone one with none
   * free to move to, the job waits as a restart does (job.pending).
   */
  deployReadyRegions(job: Job): void {
    const graph = job.graph!;
    if (job.pending) return;
    if (graph.slotOwners.some((id) => this.registry.isSuspect(id)) || relocateSlots(graph, this.registry) > 0) {
      job.pending = { restart: false, since: Date.now(), timer: null };
      return;
    }
    graph.regions.forEach((_, index) => {
      if (job.deployedRegions.has(index) || !graph.isDeployable(index, this.tracker)) return;
      job.deployedRegions.add(index);
      for (const vertex of graph.regionVertices(index)) if (!JobState.isTerminal(job.state) && vertex.state === TaskState.CREATED) this.deploy(job, vertex);
    });
  }

  /** Tells each deployed consumer of a ready partition where it is. */
  announce(job: Job, consumers: readonly string[], partitionId: string, location: PartitionLocation): void {
    for (const consumer of consumers) {
      const vertex = job.graph!.vertices.get(consumer)!;
      if (vertex.state === TaskState.CREATED) continue; // not deployed: it gets the location in its descriptor
      const tm = this.registry.get(vertex.taskManagerId);
      if (!tm) continue;
      this.registry.gateway(tm)
        .updatePartition(executionId(consumer, vertex.attempt), partitionId, location)
        .catch((e: Error) => this.unreachable(tm, `could not tell task ${consumer} that partition ${partitionId} is ready`, e));
    }
  }

  /** Stops the current attempt of a vertex (its region restarts) and releases `partitions`, what it produced. */
  stopAttempt(vertex: ExecutionVertex, jobId: string, partitions: string[]): void {
    const tm = this.registry.get(vertex.taskManagerId);
    if (!tm) return;
    const gateway = this.registry.gateway(tm);
    gateway
      .cancelTask(executionId(vertex.taskId, vertex.attempt))
      .then(() => gateway.releasePartitions(jobId, partitions))
      .catch((e: Error) => this.unreachable(tm, `could not stop task ${vertex.taskId}`, e));
  }

  /**
   * Stops an ended job on every TaskManager that gave it slots, now or before a restart
   * (every task and partition of it lives there): cancels its tasks unless it finished,
   * then releases its partitions. Resolves once each has answered, or could not be reached.
   */
  stopJob(job: Job, graph: ExecutionGraph): Promise<void> {
    const stopped = [...graph.slots.keys()].map((id) => {
      const tm = this.registry.get(id);
      if (!tm) return Promise.resolve();
      const gateway = this.registry.gateway(tm);
      const cancel = job.state === JobState.FINISHED ? Promise.resolve() : gateway.cancelJob(job.id);
      return cancel.then(() => gateway.releasePartitions(job.id)).catch((e: Error) => this.unreachable(tm, `could not stop job ${job.id} on ${id}`, e));
    });
    return Promise.all(stopped).then(() => undefined);
  }

  private deploy(job: Job, vertex: ExecutionVertex): void {
    const tm = this.registry.get(vertex.taskManagerId)!;
    vertex.transition(TaskState.DEPLOYING);
    const attempt = vertex.attempt;
    const descriptor = { ...job.graph!.descriptor(vertex, this.tracker), ...job.coordinator?.forTask(vertex) };
    this.registry.gateway(tm).deployTask(descriptor).catch((e: Error) => {
      const message = `could not deploy task ${vertex.taskId} to ${tm.id}: ${e.message}`;
      if (!(e instanceof HttpError)) this.registry.suspect(tm.id, message);
      // A TaskManager that answered, or that turns out alive, fails only this attempt.
      else if (vertex.attempt === attempt) this.refused(vertex, attempt, { code: codeOf(e, 'SPW_ERR_CONTROL_CALL'), message });
    });
  }

  /** A control call could not reach a TaskManager: it is checked, and declared lost if it does not answer. */
  private unreachable(tm: TaskManagerInfo, what: string, error: Error): void {
    if (error instanceof HttpError) log.error({ taskManager: tm.id, code: error.code }, `${what}: ${error.message}`);
    else this.registry.suspect(tm.id, `${what}: ${error.message}`);
  }
}

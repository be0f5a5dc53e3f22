import type { ErrorCode, SerializedError } from '../../errors/Errors.js';
import { JobState } from '../../lifecycle/JobState.js';
import { TaskState } from '../../lifecycle/TaskState.js';
import type { Deployment } from '../scheduler/Deployment.js';
import type { ExecutionVertex } from '../scheduler/ExecutionVertex.js';
import type { Job } from '../jobs/Job.js';
import type { PartitionTracker } from '../scheduler/PartitionTracker.js';
import { regionsToRestart } from '../scheduler/PipelinedRegions.js';
import { describeStrategy, restartDelay } from './RestartStrategy.js';
import { freeSlots, relocateSlots } from '../scheduler/SlotAllocation.js';
import type { TaskManagerInfo, TaskManagerRegistry } from '../cluster/TaskManagerRegistry.js';

/**
 * Restarts what a failure touches (Flink's RestartPipelinedRegionFailoverStrategy): the
 * failed task's region, the unfinished regions that read from a restarting one, and the
 * producers of lost blocking partitions; finished blocking partitions on live
 * TaskManagers are read again. The job's restart strategy decides whether and when; a
 * restarting job stays RUNNING. A job that may not restart is failed (`fail`): with the
 * failure's own code when its strategy is `none`, SPW_ERR_NO_RESTART_LEFT once its
 * restarts are spent.
 */
export class Failover {
  constructor(
    private readonly registry: TaskManagerRegistry,
    private readonly tracker: PartitionTracker,
    private readonly deployment: Deployment,
    private readonly slotTimeoutMs: number,
    private readonly fail: (job: Job, error: SerializedError) => void,
  ) {}

  /**
   * Restarts what `failed` (and partitions lost with `lost`) touch, as the job's strategy
   * allows, or fails the job. Failures while a restart waits join it without counting again.
   */
  failover(job: Job, failed: ExecutionVertex[], error: SerializedError, lost?: TaskManagerInfo): void {
    const graph = job.graph!;
    const time = Date.now();
    for (const v of failed) job.exceptions.push({ time, task: v.taskId, attempt: v.attempt, taskManager: v.taskManagerId, ...error });
    // Nothing ran on a lost TaskManager, but partitions still to be read were there.
    if (failed.length === 0) job.exceptions.push({ time, task: '', attempt: 0, taskManager: lost?.id ?? '', ...error });
    // A restart not yet carried out takes in what fails meanwhile (the same loss seen by another task, say).
    const joining = job.pending?.restart === true;
    const delay = joining ? 0 : restartDelay(job.restart, job.restarts + 1);
    if (delay === null) {
      const none = job.restart.strategy === 'none';
      const spent = none ? describeStrategy(job.restart) : `${job.restarts} restarts, ${describeStrategy(job.restart)}`;
      const code: ErrorCode = none ? error.code : 'SPW_ERR_NO_RESTART_LEFT';
      this.fail(job, { code, message: `${error.message} (no restart left: ${spent})` });
      return;
    }
    const finished = (r: number): boolean => this.isFinished(job, r);
    const seeds = new Set(failed.map((v) => graph.regionOf(v.taskId)));
    const isLost = this.lostPartitions();
    if (lost) graph.regions.forEach((_, r) => !finished(r) && this.hasLostInput(job, r, isLost) && seeds.add(r));
    const restart = regionsToRestart(graph.groups, (taskId) => graph.regionOf(taskId), seeds, finished, (group, i) => isLost(graph.partitionId(group.edge, group.producers[i])));
    for (const r of restart) this.resetRegion(job, r);
    // A job with checkpoints restarts from its latest: what was under way is aborted, and its sources' assignment goes back to then.
    job.coordinator?.restarting();
    if (joining) return;
    job.restarts++;
    job.pending = { restart: true, since: null, timer: setTimeout(() => this.delayPassed(job), delay) };
  }

  /** A TaskManager is gone with its tasks and partitions: the job restarts what it lost there, or moves its slots off it. */
  taskManagerLost(job: Job, tm: TaskManagerInfo, reason: string): void {
    const graph = job.graph;
    if (JobState.isTerminal(job.state) || !graph) return;
    const running = [...graph.vertices.values()].filter((v) => v.taskManagerId === tm.id && v.state !== TaskState.CREATED && !v.isTerminal);
    const isLost = this.lostPartitions();
    const needed = graph.regions.some((_, r) => !this.isFinished(job, r) && this.hasLostInput(job, r, isLost));
    if (running.length > 0 || needed) this.failover(job, running, { code: 'SPW_ERR_TASKMANAGER_LOST', message: reason }, tm);
    else if (graph.slotOwners.includes(tm.id) && !job.pending) this.deployment.deployReadyRegions(job);
  }

  /** Moves slots off lost TaskManagers and deploys again; keeps waiting (up to the slot timeout) while slots are short. */
  resume(job: Job): void {
    const pending = job.pending!;
    // A suspect TaskManager is being checked: it is either back or lost within the check's timeout.
    if (job.graph!.slotOwners.some((id) => this.registry.isSuspect(id))) return;
    const missing = relocateSlots(job.graph!, this.registry);
    if (missing > 0) {
      if (Date.now() - pending.since! > this.slotTimeoutMs) {
        const free = freeSlots(this.registry.available());
        const message = `could not restart: ${missing} more free slot(s) needed on live taskmanagers, ${free} free after waiting ${this.slotTimeoutMs} ms`;
        this.fail(job, { code: 'SPW_ERR_NO_SLOTS', message });
      }
      return;
    }
    job.pending = null;
    this.deployment.deployReadyRegions(job);
  }

  private delayPassed(job: Job): void {
    if (!job.pending || JobState.isTerminal(job.state)) return;
    job.pending.since = Date.now();
    this.resume(job);
  }

  private isFinished(job: Job, region: number): boolean {
    return job.graph!.regionVertices(region).every((v) => v.state === TaskState.FINISHED);
  }

  /** Some partition the region reads from another was ready on a TaskManager that is gone. */
  private hasLostInput(job: Job, region: number, isLost: (partitionId: string) => boolean): boolean {
    const graph = job.graph!;
    return graph.regionInputs[region].some(({ group, producers }) => producers.some((s) => isLost(graph.partitionId(group.edge, s))));
  }

  /**
   * Whether a partition of the job was ready on a TaskManager that is gone, each asked
   * once: the consumers of an all-to-all edge all ask of the same producers.
   */
  private lostPartitions(): (partitionId: string) => boolean {
    const known = new Map<string, boolean>();
    return (partitionId) => {
      let lost = known.get(partitionId);
      if (lost === undefined) {
        const partition = this.tracker.get(partitionId);
        lost = partition !== undefined && partition.ready && !this.registry.get(partition.location!.taskManagerId);
        known.set(partitionId, lost);
      }
      return lost;
    };
  }

  /** Stops a region's tasks and drops its partitions; its subtasks start again at their next attempt. */
  private resetRegion(job: Job, region: number): void {
    const graph = job.graph!;
    job.deployedRegions.delete(region);
    for (const vertex of graph.regionVertices(region)) {
      if (vertex.state === TaskState.CREATED) continue;
      const partitions = graph.partitionsOf(vertex);
      for (const id of partitions) this.tracker.untrack(id);
      this.deployment.stopAttempt(vertex, job.id, partitions);
      job.splits.get(vertex.stage)?.giveBack(vertex.subtask);
      vertex.newAttempt();
      graph.trackPartitionsOf(vertex, this.tracker);
    }
  }
}

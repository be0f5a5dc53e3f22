import { codeOf, SpillwayError, type SerializedError } from '../../errors/Errors.js';
import { SplitAssigner, SplitRequestError } from '../../connectors/SplitAssigner.js';
import { sourceSpec } from '../../connectors/Sources.js';
import { JobState } from '../../lifecycle/JobState.js';
import { TaskState } from '../../lifecycle/TaskState.js';
import type { TaskBufferStats } from '../../network/networkThread/NetworkEnd.js';
import type { CheckpointAck, PartitionLocation, Split, TaskCounters, TaskStateReport } from '../../rpc/TaskDeployment.js';
import { log } from '../../Logger.js';
import { Deployment } from './Deployment.js';
import type { ExecutionVertex } from './ExecutionVertex.js';
import { Failover } from '../failover/Failover.js';
import { createJob, jobIdOf, moveJob, type Job, type JobSubmission } from '../jobs/Job.js';
import type { JobHistory } from '../store/JobHistory.js';
import { JobOutputs, type ResultsListener } from '../jobs/JobOutputs.js';
import { snapshot } from '../jobs/JobViews.js';
import { CheckpointCoordinator } from '../checkpoint/CheckpointCoordinator.js';
import type { CheckpointMetadata } from '../checkpoint/CheckpointMetadata.js';
import { PartitionTracker } from './PartitionTracker.js';
import { allocateSlots, releaseSlots } from './SlotAllocation.js';
import type { TaskManagerInfo, TaskManagerRegistry } from '../cluster/TaskManagerRegistry.js';
import { ratesBetween } from '../jobs/TaskRates.js';

/**
 * Runs jobs on the cluster: queues them until their slots are free, starts them, takes
 * their tasks' reports, and ends them (finished, failed, canceled) by stopping their
 * tasks and releasing all their partitions. Deployment.ts makes the calls to
 * TaskManagers, Failover.ts restarts what a failure touches, JobOutputs.ts keeps results
 * and commits sinks.
 */
export class Scheduler {
  /** Live jobs only: an ended job is handed to the history, which keeps its record, and leaves the heap. */
  readonly jobs = new Map<string, Job>();
  private readonly queue: Job[] = [];
  private readonly tracker = new PartitionTracker();
  private readonly deployment: Deployment;
  private readonly failover: Failover;
  private readonly outputs: JobOutputs;
  /** Split supplies being made, by job and stage: asks that come meanwhile wait for the same one. */
  private readonly makingSplits = new Map<string, Promise<SplitAssigner<Split>>>();

  constructor(
    private readonly registry: TaskManagerRegistry,
    private readonly history: JobHistory,
    private readonly slotTimeoutMs: number,
    /** Told once of every job that ended, after the history has its record. */
    private readonly onEnded: (job: Job) => void = () => {},
    /** Completes a job's checkpoint in the HA store (compare-and-set on the leader's epoch) before its sinks are told to commit; none without HA. */
    private readonly confirmCheckpoint?: (job: Job, metadata: CheckpointMetadata) => Promise<void>,
  ) {
    this.deployment = new Deployment(registry, this.tracker, (vertex, attempt, error) =>
      this.taskStateChanged(vertex.taskId, { attempt, state: TaskState.FAILED, error }),
    );
    this.failover = new Failover(registry, this.tracker, this.deployment, slotTimeoutMs, (job, error) => this.fail(job, error));
    this.outputs = new JobOutputs(history);
  }

  /**
   * Queues a job; `identity` gives its number and submission time (so its id) when the
   * cluster numbers jobs (HA), or when a new leader runs a job submitted to an older one.
   */
  submit(submission: JobSubmission, identity?: { seq: number; submitted: number }): Job {
    const job = identity === undefined ? createJob(this.history.takeSeq(), submission) : createJob(identity.seq, submission, identity.submitted);
    this.jobs.set(job.id, job);
    this.history.submitted(snapshot(job));
    log.info({ job: job.id, name: job.name, parallelism: job.parallelism }, 'job submitted');
    this.queue.push(job);
    this.schedule();
    return job;
  }

  /** Starts every queued job whose slots are free now, resumes restarts waiting for slots; fails those that waited too long. */
  schedule(): void {
    for (const job of [...this.queue]) {
      if (job.state !== JobState.CREATED) {
        this.dequeue(job);
        continue;
      }
      if (this.allocate(job)) {
        this.dequeue(job);
        this.start(job);
      } else if (!JobState.isTerminal(job.state) && Date.now() - job.submitted > this.slotTimeoutMs) {
        this.dequeue(job);
        const message = `not enough free slots: the job needs ${job.parallelism}, the cluster has ${this.registry.totalSlots} in all`;
        this.fail(job, { code: 'SPW_ERR_NO_SLOTS', message });
      }
    }
    for (const job of this.jobs.values()) if (job.pending?.since != null) this.failover.resume(job);
  }

  /**
   * This JobManager stopped leading: every job is dropped from the heap as it stands,
   * nothing told to any TaskManager, no file removed and nothing recorded as ended (the
   * new leader runs the jobs on from the HA store). The scheduler is not used again.
   */
  suspend(): void {
    for (const job of this.jobs.values()) {
      if (job.pending?.timer) clearTimeout(job.pending.timer);
      job.pending = null;
      job.coordinator?.suspend();
    }
    this.jobs.clear();
    this.queue.length = 0;
  }

  cancel(job: Job): void {
    if (JobState.isTerminal(job.state)) return;
    this.end(job, JobState.CANCELED);
  }

  taskStateChanged(taskId: string, report: TaskStateReport): void {
    const { attempt, state, error, counters, at = Date.now() } = report;
    const job = this.jobs.get(jobIdOf(taskId));
    const vertex = job?.graph?.vertices.get(taskId);
    // A report of an earlier attempt: that attempt was restarted and no longer counts.
    if (!job || !vertex || vertex.attempt !== attempt) return;
    if (counters) vertex.counters = counters;
    // A report repeated (its answer was lost and it was sent again) or late (the job ended meanwhile) changes nothing.
    if (!TaskState.allows(vertex.state, state)) return;
    log.debug({ job: job.id, task: taskId, taskManager: vertex.taskManagerId, state, error }, 'task state');
    vertex.transition(state);
    // An ended task's rates are over its life; its buffers are all back.
    if (vertex.isTerminal) {
      vertex.rates = ratesBetween(null, { at: Date.now(), counters: vertex.counters }, job.started ?? job.submitted);
      vertex.buffers = undefined;
      vertex.ended = at;
    } else if (state === TaskState.RUNNING) vertex.started = at;
    if (error) vertex.error = error;
    if (JobState.isTerminal(job.state)) return;
    if (state === TaskState.FAILED) this.failover.failover(job, [vertex], error ?? { code: 'SPW_ERR_TASK_FAILED', message: `task ${taskId} failed` });
    // The JobManager marks the tasks it cancels itself: this cancel came from elsewhere (its TaskManager left the cluster).
    else if (state === TaskState.CANCELED) this.failover.failover(job, [vertex], canceledElsewhere(vertex, error));
    else if (state === TaskState.FINISHED) this.onTaskFinished(job);
  }

  /** Counters of a running task (its final ones come with its final state). */
  updateCounters(taskId: string, counters: TaskCounters, buffers?: TaskBufferStats): void {
    const job = this.jobs.get(jobIdOf(taskId));
    const vertex = job?.graph?.vertices.get(taskId);
    if (!job || !vertex || vertex.isTerminal) return;
    const sample = { at: Date.now(), counters };
    vertex.rates = ratesBetween(vertex.sample ?? null, sample, job.started ?? job.submitted);
    vertex.sample = sample;
    vertex.counters = counters;
    vertex.buffers = buffers;
  }

  partitionReady(partitionId: string, location: PartitionLocation): void {
    const partition = this.tracker.markReady(partitionId, location);
    if (!partition) return;
    const job = this.jobs.get(partition.jobId);
    if (!job?.graph || JobState.isTerminal(job.state)) return;
    if (!partition.locatedAtDeploy) this.deployment.announce(job, partition.consumerTasks, partitionId, location);
    // A region reading it may now start (at once for a pipelined type across regions, such as hybrid).
    this.deployment.deployReadyRegions(job);
  }

  /** Stores a task attempt's collected records, part `part` of them (JobOutputs.addResults); resolves once stored. */
  async addResults(taskId: string, attempt: number, packed: Buffer, part = 0, origin?: number): Promise<void> {
    const job = this.jobs.get(jobIdOf(taskId));
    if (job) await this.outputs.addResults(job, taskId, attempt, packed, part, origin);
  }

  /** Told of every part of collected records stored, as it is: what a follower of the job's result streams. */
  onResults(listener: ResultsListener): () => void {
    return this.outputs.onResults(listener);
  }

  /**
   * The next splits of a source for a subtask's attempt (its request number
   * `request`, from 0): empty once its input is all handed out (or, unbounded, when
   * nothing new is there). Throws a SplitRequestError (SPW_ERR_SPLIT_REQUEST) for an
   * attempt that no longer runs.
   */
  async nextSplits(taskId: string, attempt: number, request: number): Promise<Split[]> {
    let { job, vertex } = this.splitReader(taskId, attempt);
    const assigner = job.splits.get(vertex.stage) ?? (await this.splitAssigner(job, vertex.stage, vertex.parallelism));
    // A checkpoint's trigger holds the source's asks until it has taken its snapshot.
    if (assigner.isHeld(vertex.subtask)) await assigner.whenReleased(vertex.subtask);
    // The supply may have taken a while to make, or the ask was held: the attempt must still be the one running.
    ({ job, vertex } = this.splitReader(taskId, attempt));
    return assigner.next(vertex.subtask, attempt, request);
  }

  /** The job and vertex of a running task attempt that asks for splits; a SplitRequestError for any other. */
  private splitReader(taskId: string, attempt: number): { job: Job; vertex: ExecutionVertex } {
    const job = this.jobs.get(jobIdOf(taskId));
    const vertex = job?.graph?.vertices.get(taskId);
    if (!job || !vertex || vertex.attempt !== attempt || JobState.isTerminal(job.state)) {
      throw new SplitRequestError(`task ${taskId} attempt ${attempt} is not running: it gets no splits`);
    }
    return { job, vertex };
  }

  /**
   * The split assigner of a stage, made at its first ask from the source's supply (which
   * may ask its service first: every ask meanwhile waits for the same one); a job
   * restored from a checkpoint or savepoint hands out first what its sources held then.
   * A supply that could not be made is not kept: the next ask tries again.
   */
  private splitAssigner(job: Job, stage: string, parallelism: number): Promise<SplitAssigner<Split>> {
    const key = `${job.id}/${stage}`;
    let making = this.makingSplits.get(key);
    if (making === undefined) {
      const source = job.graph!.stages.find((s) => s.name === stage)?.source;
      const supply = source && sourceSpec(source).splits?.(source, parallelism);
      if (supply === undefined) return Promise.reject(new SplitRequestError(`stage ${stage} of job ${job.id} reads no source that has splits`));
      making = Promise.resolve(supply).then(
        (made) => {
          this.makingSplits.delete(key);
          let assigner = job.splits.get(stage);
          if (assigner === undefined) {
            assigner = new SplitAssigner<Split>(made);
            const restored = job.coordinator?.restoredAssignment(stage);
            if (restored) assigner.restore(restored.assigner, restored.held);
            job.splits.set(stage, assigner);
          }
          return assigner;
        },
        (error: unknown) => {
          this.makingSplits.delete(key);
          // The source's service failed, not the call: answered at once (424), which the
          // TaskManager does not retry; the task fails with the error's code, and the job's
          // restart strategy applies.
          throw Object.assign(error instanceof Error ? error : new SpillwayError('SPW_ERR_SOURCE_IO', String(error)), { statusCode: 424 });
        },
      );
      this.makingSplits.set(key, making);
    }
    return making;
  }

  /** A task stored its part of a checkpoint. */
  acknowledgeCheckpoint(taskId: string, attempt: number, ack: CheckpointAck): void {
    const job = this.jobs.get(jobIdOf(taskId));
    const vertex = job?.graph?.vertices.get(taskId);
    if (job?.coordinator && vertex) job.coordinator.acknowledge(vertex, attempt, ack);
  }

  /** A task could not take part in a checkpoint. */
  declineCheckpoint(taskId: string, attempt: number, id: number, error: SerializedError): void {
    const job = this.jobs.get(jobIdOf(taskId));
    const vertex = job?.graph?.vertices.get(taskId);
    if (job?.coordinator && vertex) job.coordinator.decline(vertex, attempt, id, error);
  }

  /**
   * A savepoint of a running job into `directory`; with `stop`, the job then stops (its
   * sources end there, its sinks commit it, and it FINISHES). Its id; SPW_ERR_JOB_RESTARTING
   * while the job restarts, SPW_ERR_CHECKPOINT_CONFIG for a job that takes no checkpoints.
   */
  savepoint(job: Job, directory: string, stop: boolean): number {
    if (JobState.isTerminal(job.state)) throw new SpillwayError('SPW_ERR_JOB_ENDED', `job ${job.id} is ${job.state} already`);
    if (job.coordinator === null) {
      const why = job.state === JobState.CREATED ? 'is waiting for its slots' : 'takes no checkpoints (give it "checkpoints" when you submit it)';
      throw new SpillwayError(job.state === JobState.CREATED ? 'SPW_ERR_JOB_RESTARTING' : 'SPW_ERR_CHECKPOINT_CONFIG', `job ${job.id} ${why}`);
    }
    return job.coordinator.savepoint(directory, stop);
  }

  /** A TaskManager is gone with its tasks and partitions: every job it served restarts what it lost. */
  taskManagerLost(tm: TaskManagerInfo, reason: string): void {
    for (const job of [...this.jobs.values()]) this.failover.taskManagerLost(job, tm, reason);
    this.schedule();
  }

  /** Plans a queued job and takes its slots; false while they are short, or once it failed as it cannot be planned. */
  private allocate(job: Job): boolean {
    try {
      job.graph = allocateSlots(job, this.registry);
    } catch (error) {
      this.fail(job, { code: codeOf(error, 'SPW_ERR_INVALID_JOB'), message: (error as Error).message });
      return false;
    }
    return job.graph !== null;
  }

  private start(job: Job): void {
    moveJob(job, JobState.RUNNING);
    job.started = Date.now();
    if (job.checkpoints) {
      const confirm = this.confirmCheckpoint;
      const context = { registry: this.registry, history: this.history, fail: (error: SerializedError) => this.fail(job, error), confirm: confirm && ((metadata: CheckpointMetadata) => confirm(job, metadata)) };
      job.coordinator = new CheckpointCoordinator(job, job.checkpoints, context, job.savepoint ?? null);
      job.coordinator.start();
    }
    log.info({ job: job.id, taskManagers: [...job.graph!.slots.keys()] }, 'job running');
    job.graph!.trackPartitions(this.tracker);
    this.deployment.deployReadyRegions(job);
  }

  private onTaskFinished(job: Job): void {
    const vertices = [...job.graph!.vertices.values()];
    if (!vertices.every((v) => v.state === TaskState.FINISHED)) return;
    try {
      this.outputs.commit(job);
    } catch (error) {
      this.fail(job, { code: codeOf(error, 'SPW_ERR_COMMIT'), message: (error as Error).message });
      return;
    }
    this.end(job, JobState.FINISHED);
  }

  private fail(job: Job, error: SerializedError): void {
    if (JobState.isTerminal(job.state)) return;
    job.failure = error;
    this.end(job, JobState.FAILED);
  }

  /** Ends a job in any state: stops its tasks, releases its partitions (and spill files), frees its slots. */
  private end(job: Job, state: JobState): void {
    moveJob(job, state);
    job.ended = Date.now();
    const failure = job.failure;
    log[state === JobState.FAILED ? 'warn' : 'info'](
      { job: job.id, state, code: failure?.code, error: failure?.message, durationMs: job.ended - (job.started ?? job.submitted) },
      `job ${state.toLowerCase()}`,
    );
    if (job.pending?.timer) clearTimeout(job.pending.timer);
    job.pending = null;
    const coordinator = job.coordinator;
    coordinator?.close();
    this.dequeue(job);
    const graph = job.graph;
    if (graph && state !== JobState.FINISHED) {
      for (const vertex of graph.vertices.values()) if (!vertex.isTerminal) vertex.transition(TaskState.CANCELED);
    }
    this.jobs.delete(job.id);
    this.history.ended(snapshot(job));
    this.onEnded(job);
    if (graph) {
      this.tracker.releaseJob(job.id);
      const stopped = this.deployment.stopJob(job, graph);
      // Once every task has stopped (its cancel answers then), no attempt writes any more: their files go.
      // After the response to a cancel: a failure here is logged, never thrown at nobody (it would end the process).
      const cleanup = (what: string, step: () => void | Promise<void>): void =>
        void stopped.then(step).catch((error: Error) => log.warn({ job: job.id, error: error.message }, `${what} not removed`));
      if (state !== JobState.FINISHED) cleanup('attempt files', () => this.outputs.abort(graph));
      if (coordinator) cleanup('checkpoint files', () => coordinator.removeFiles());
      releaseSlots(graph, this.registry);
    }
    setImmediate(() => this.schedule());
  }

  private dequeue(job: Job): void {
    const i = this.queue.indexOf(job);
    if (i >= 0) this.queue.splice(i, 1);
  }
}

/** A task canceled by its TaskManager, not by the JobManager: it left the cluster. */
function canceledElsewhere(vertex: ExecutionVertex, error: SerializedError | undefined): SerializedError {
  return { code: error?.code ?? 'SPW_ERR_TASK_CANCELED', message: `task ${vertex.taskId} was canceled on taskmanager ${vertex.taskManagerId}` };
}

import type { JobDefinition } from '../job/JobDefinition.js';
import { callJson } from '../job/Http.js';
import type { JobReference, PartitionLocation, TaskCounters, TaskState } from '../job/TaskDeployment.js';
import type { PartitionType } from '../network/partition/PartitionType.js';
import type { TaskBufferStats } from '../network/thread/NetworkEnd.js';
import { ExecutionGraph, type ExecutionVertex } from './ExecutionGraph.js';
import type { JobHistory } from './JobHistory.js';
import { snapshot } from './JobViews.js';
import { PartitionTracker } from './PartitionTracker.js';
import type { TaskManagerInfo, TaskManagerRegistry } from './TaskManagerRegistry.js';
import { ratesBetween } from './TaskRates.js';
import { log } from '../Logger.js';

export type JobState = 'CREATED' | 'RUNNING' | 'FINISHED' | 'FAILED' | 'CANCELED';

export interface JobSubmission {
  name: string;
  definition: JobDefinition;
  ref: JobReference;
  parallelism: number;
  /** The default type of its edges. */
  exchange: PartitionType;
  /** The default compression of its edges. */
  compression: boolean;
  bufferTimeout: number;
}

/** A submitted job through its life. */
export interface Job extends JobSubmission {
  id: string;
  /** Its number: the store's key. */
  seq: number;
  state: JobState;
  error?: string;
  submitted: number;
  started?: number;
  ended?: number;
  graph: ExecutionGraph | null;
  /** Bytes of collected records stored, by task index; the records themselves are in the store. */
  resultBytes: Map<number, number>;
  deployedRegions: Set<number>;
}

const TERMINAL: ReadonlySet<string> = new Set(['FINISHED', 'FAILED', 'CANCELED']);

export function isTerminal(state: string): boolean {
  return TERMINAL.has(state);
}

/**
 * Runs jobs on the cluster: queues them until their slots are free, places them,
 * deploys each pipelined region once the blocking partitions it reads are finished,
 * tells consumers where ready partitions are, and ends jobs (finished, failed,
 * canceled) by stopping their tasks and releasing all their partitions.
 */
export class Scheduler {
  /** Live jobs only: an ended job is handed to the history, which keeps its record, and leaves the heap. */
  readonly jobs = new Map<string, Job>();
  private readonly queue: Job[] = [];
  private readonly tracker = new PartitionTracker();

  constructor(
    private readonly registry: TaskManagerRegistry,
    private readonly history: JobHistory,
    private readonly slotTimeoutMs = 60_000,
    /** Told once of every job that ended, after the history has its record. */
    private readonly onEnded: (job: Job) => void = () => {},
  ) {}

  submit(submission: JobSubmission): Job {
    const seq = this.history.takeSeq();
    const id = `job-${String(seq).padStart(4, '0')}-${Date.now().toString(36)}`;
    const job: Job = { ...submission, id, seq, state: 'CREATED', submitted: Date.now(), graph: null, resultBytes: new Map(), deployedRegions: new Set() };
    this.jobs.set(id, job);
    this.history.submitted(snapshot(job));
    log.info({ job: id, name: job.name, parallelism: job.parallelism }, 'job submitted');
    this.queue.push(job);
    this.schedule();
    return job;
  }

  /** Starts every queued job whose slots are free now; fails those that waited too long. */
  schedule(): void {
    for (const job of [...this.queue]) {
      if (job.state !== 'CREATED') {
        this.dequeue(job);
        continue;
      }
      const taskManagers = this.registry.sorted();
      if (this.tryAllocate(job, taskManagers)) {
        this.dequeue(job);
        this.start(job);
      } else if (Date.now() - job.submitted > this.slotTimeoutMs) {
        this.dequeue(job);
        const total = this.registry.totalSlots;
        this.fail(job, `not enough free slots: the job needs ${job.parallelism}, the cluster has ${total} in all`);
      }
    }
  }

  cancel(job: Job): void {
    if (isTerminal(job.state)) return;
    this.end(job, 'CANCELED');
  }

  taskStateChanged(taskId: string, state: TaskState, error: string | undefined, counters: TaskCounters | undefined): void {
    const job = this.jobOfTask(taskId);
    const vertex = job?.graph?.vertices.get(taskId);
    if (!job || !vertex) return;
    if (counters) vertex.counters = counters;
    if (isTerminal(vertex.state)) return;
    log.debug({ job: job.id, task: taskId, taskManager: vertex.taskManagerId, state, error }, 'task state');
    // An ended task's rates are over its life; its buffers are all back.
    if (isTerminal(state)) {
      vertex.rates = ratesBetween(null, { at: Date.now(), counters: vertex.counters }, job.started ?? job.submitted);
      vertex.buffers = undefined;
    }
    vertex.state = state;
    if (error) vertex.error = error;
    if (isTerminal(job.state)) return;
    if (state === 'FAILED') this.fail(job, error ?? `task ${taskId} failed`);
    else if (state === 'CANCELED') this.fail(job, `task ${taskId} was canceled on taskmanager ${vertex.taskManagerId}`);
    else if (state === 'FINISHED') this.onTaskFinished(job);
  }

  /** Counters of a running task (its final ones come with its final state). */
  updateCounters(taskId: string, counters: TaskCounters, buffers?: TaskBufferStats): void {
    const job = this.jobOfTask(taskId);
    const vertex = job?.graph?.vertices.get(taskId);
    if (!job || !vertex || isTerminal(vertex.state)) return;
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
    if (!job?.graph || isTerminal(job.state)) return;
    for (const consumer of partition.consumerTasks) {
      const vertex = job.graph.vertices.get(consumer)!;
      if (vertex.state === 'CREATED') continue; // not deployed: it gets the location in its descriptor
      const tm = this.registry.get(vertex.taskManagerId);
      if (!tm) continue;
      callJson('POST', `${tmUrl(tm)}/tasks/${encodeURIComponent(consumer)}/partitions`, { partitionId, location }).catch((e: Error) =>
        this.fail(job, `could not tell task ${consumer} that partition ${partitionId} is ready: ${e.message}`),
      );
    }
    // A region reading it may now start (at once for a pipelined type across regions, such as hybrid).
    this.deployReadyRegions(job);
  }

  /**
   * Stores a task's collected records (msgpack, as its TaskManager packed them), keyed
   * by the task's index in stage and subtask order, so a sorted (range-partitioned)
   * result reads back sorted. Resolves once stored: the task reports FINISHED after.
   */
  async addResults(taskId: string, packed: Buffer): Promise<void> {
    const job = this.jobOfTask(taskId);
    if (!job?.graph || isTerminal(job.state)) return;
    const index = [...job.graph.vertices.keys()].indexOf(taskId);
    if (index < 0) return;
    await this.history.saveResults(job.seq, index, packed);
    job.resultBytes.set(index, packed.length);
    // The job ended while they were written (it failed or was canceled): they are not kept.
    if (isTerminal(job.state) && job.state !== 'FINISHED') await this.history.dropResults(job.seq);
  }

  taskManagerLost(tm: TaskManagerInfo, reason: string): void {
    for (const job of this.jobs.values()) {
      if (isTerminal(job.state) || !job.graph) continue;
      if (job.graph.slots.has(tm.id)) this.fail(job, reason);
    }
    this.schedule();
  }

  private tryAllocate(job: Job, taskManagers: TaskManagerInfo[]): boolean {
    if (taskManagers.length === 0) return false;
    let graph: ExecutionGraph;
    try {
      graph = new ExecutionGraph(job.id, job.definition, job.parallelism, job.exchange, job.compression, job.ref, taskManagers, job.bufferTimeout);
    } catch (error) {
      this.fail(job, (error as Error).message);
      return false;
    }
    for (const [id, slots] of graph.slots) if (this.registry.get(id)!.freeSlots < slots) return false;
    for (const [id, slots] of graph.slots) this.registry.get(id)!.freeSlots -= slots;
    job.graph = graph;
    return true;
  }

  private start(job: Job): void {
    job.state = 'RUNNING';
    job.started = Date.now();
    log.info({ job: job.id, taskManagers: [...job.graph!.slots.keys()] }, 'job running');
    job.graph!.trackPartitions(this.tracker);
    this.deployReadyRegions(job);
  }

  private deployReadyRegions(job: Job): void {
    const graph = job.graph!;
    graph.regions.forEach((region, index) => {
      if (job.deployedRegions.has(index) || !graph.isDeployable(region, this.tracker)) return;
      job.deployedRegions.add(index);
      for (const stage of region) for (const vertex of graph.verticesOf(stage)) if (!isTerminal(job.state)) this.deploy(job, vertex);
    });
  }

  private deploy(job: Job, vertex: ExecutionVertex): void {
    const tm = this.registry.get(vertex.taskManagerId);
    if (!tm) {
      this.fail(job, `taskmanager ${vertex.taskManagerId} of task ${vertex.taskId} is gone`);
      return;
    }
    vertex.state = 'DEPLOYING';
    const descriptor = job.graph!.descriptor(vertex, this.tracker);
    callJson('POST', `${tmUrl(tm)}/tasks`, descriptor).catch((e: Error) =>
      this.fail(job, `could not deploy task ${vertex.taskId} to ${tm.id}: ${e.message}`),
    );
  }

  private onTaskFinished(job: Job): void {
    const vertices = [...job.graph!.vertices.values()];
    if (vertices.every((v) => v.state === 'FINISHED')) this.end(job, 'FINISHED');
  }

  private fail(job: Job, error: string): void {
    if (isTerminal(job.state)) return;
    job.error = error;
    this.end(job, 'FAILED');
  }

  /** Ends a job in any state: stops its tasks, releases its partitions (and spill files), frees its slots. */
  private end(job: Job, state: JobState): void {
    job.state = state;
    job.ended = Date.now();
    log[state === 'FAILED' ? 'warn' : 'info']({ job: job.id, state, error: job.error, durationMs: job.ended - (job.started ?? job.submitted) }, `job ${state.toLowerCase()}`);
    this.dequeue(job);
    const graph = job.graph;
    if (graph && state !== 'FINISHED') {
      for (const vertex of graph.vertices.values()) if (!isTerminal(vertex.state)) vertex.state = 'CANCELED';
    }
    this.jobs.delete(job.id);
    this.history.ended(snapshot(job));
    this.onEnded(job);
    if (graph) {
      this.tracker.releaseJob(job.id);
      // Every task and partition of the job lives on a TaskManager that gave it slots.
      for (const id of graph.slots.keys()) {
        const tm = this.registry.get(id);
        if (!tm) continue;
        const stop = state === 'FINISHED' ? Promise.resolve() : callJson('POST', `${tmUrl(tm)}/jobs/${job.id}/cancel`, {});
        stop
          .then(() => callJson('POST', `${tmUrl(tm)}/jobs/${job.id}/release`, {}))
          .catch((e: Error) => log.warn({ job: job.id, taskManager: id, err: e }, 'could not stop the job on a taskmanager'));
      }
      for (const [id, slots] of graph.slots) {
        const tm = this.registry.get(id);
        if (tm) tm.freeSlots += slots;
      }
    }
    setImmediate(() => this.schedule());
  }

  private dequeue(job: Job): void {
    const i = this.queue.indexOf(job);
    if (i >= 0) this.queue.splice(i, 1);
  }

  private jobOfTask(taskId: string): Job | undefined {
    return this.jobs.get(taskId.slice(0, taskId.indexOf('.')));
  }
}

/** An IPv6 address goes in brackets in a URL. */
function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

export function tmUrl(tm: TaskManagerInfo): string {
  return `${tm.https ? 'https' : 'http'}://${formatHost(tm.host)}:${tm.httpPort}`;
}

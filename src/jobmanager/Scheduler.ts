import type { JobDefinition } from '../job/JobDefinition.js';
import { callJson, HttpError } from '../job/Http.js';
import { executionId, type JobReference, type PartitionLocation, type TaskCounters, type TaskStateReport } from '../job/TaskDeployment.js';
import { abortTextOutput, commitTextOutput } from '../job/TextSink.js';
import type { PartitionType } from '../network/partition/PartitionType.js';
import type { CompressionCodec } from '../network/buffer/CompressionCodec.js';
import type { TaskBufferStats } from '../network/thread/NetworkEnd.js';
import { ExecutionGraph, type ExecutionVertex } from './ExecutionGraph.js';
import type { JobHistory } from './JobHistory.js';
import { snapshot } from './JobViews.js';
import { PartitionTracker } from './PartitionTracker.js';
import { regionsToRestart } from './PipelinedRegions.js';
import { describeStrategy, restartDelay, type RestartStrategy } from './RestartStrategy.js';
import type { TaskManagerInfo, TaskManagerRegistry } from './TaskManagerRegistry.js';
import { ratesBetween } from './TaskRates.js';
import { SplitAssigner, SplitRequestError } from './SplitAssigner.js';
import type { TextSplit } from '../job/TextSplits.js';
import { log } from '../Logger.js';

export type JobState = 'CREATED' | 'RUNNING' | 'FINISHED' | 'FAILED' | 'CANCELED';

export interface JobSubmission {
  name: string;
  definition: JobDefinition;
  ref: JobReference;
  parallelism: number;
  /** The default type of its edges. */
  exchange: PartitionType;
  /** The default codec of its edges, or null: none. */
  compression: CompressionCodec | null;
  bufferTimeout: number;
  restart: RestartStrategy;
}

/** One failure of a task attempt, as GET /jobs/:id/exceptions lists it. */
export interface JobException {
  time: number;
  task: string;
  attempt: number;
  taskManager: string;
  message: string;
}

/** Regions reset for a restart, deployed again once the restart delay passed and their slots are on live TaskManagers. */
interface PendingRestart {
  /**
   * A restart (counted, after its delay), not a deployment that waits for a suspect
   * TaskManager's check or for slots: a failure during such a wait is a restart of its own.
   */
  restart: boolean;
  /** When the delay passed, and since when slots have been waited for; null while the delay runs. */
  since: number | null;
  timer: NodeJS.Timeout | null;
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
  /** Restarts so far (each may restart several regions). */
  restarts: number;
  exceptions: JobException[];
  pending: PendingRestart | null;
  /** Each text source's splits, handed out as its subtasks ask; by stage, made at the first ask. */
  splits: Map<string, SplitAssigner>;
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
 *
 * A failed task, or a lost TaskManager, restarts only the regions it touches (Flink's
 * RestartPipelinedRegionFailoverStrategy): the failed task's region, the unfinished
 * regions that read from a restarting one, and the producers of lost blocking
 * partitions; finished blocking partitions on live TaskManagers are read again. The
 * job's restart strategy decides whether and when; a restarting job stays RUNNING.
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
    const job: Job = {
      ...submission,
      id,
      seq,
      state: 'CREATED',
      submitted: Date.now(),
      graph: null,
      resultBytes: new Map(),
      deployedRegions: new Set(),
      restarts: 0,
      exceptions: [],
      pending: null,
      splits: new Map(),
    };
    this.jobs.set(id, job);
    this.history.submitted(snapshot(job));
    log.info({ job: id, name: job.name, parallelism: job.parallelism }, 'job submitted');
    this.queue.push(job);
    this.schedule();
    return job;
  }

  /** Starts every queued job whose slots are free now, resumes restarts waiting for slots; fails those that waited too long. */
  schedule(): void {
    for (const job of [...this.queue]) {
      if (job.state !== 'CREATED') {
        this.dequeue(job);
        continue;
      }
      if (this.tryAllocate(job, this.registry.available())) {
        this.dequeue(job);
        this.start(job);
      } else if (Date.now() - job.submitted > this.slotTimeoutMs) {
        this.dequeue(job);
        const total = this.registry.totalSlots;
        this.fail(job, `not enough free slots: the job needs ${job.parallelism}, the cluster has ${total} in all`);
      }
    }
    for (const job of this.jobs.values()) if (job.pending?.since != null) this.resume(job);
  }

  cancel(job: Job): void {
    if (isTerminal(job.state)) return;
    this.end(job, 'CANCELED');
  }

  taskStateChanged(taskId: string, report: TaskStateReport): void {
    const { attempt, state, error, counters, at = Date.now() } = report;
    const job = this.jobOfTask(taskId);
    const vertex = job?.graph?.vertices.get(taskId);
    // A report of an earlier attempt: that attempt was restarted and no longer counts.
    if (!job || !vertex || vertex.attempt !== attempt) return;
    if (counters) vertex.counters = counters;
    if (isTerminal(vertex.state)) return;
    log.debug({ job: job.id, task: taskId, taskManager: vertex.taskManagerId, state, error }, 'task state');
    // An ended task's rates are over its life; its buffers are all back.
    if (isTerminal(state)) {
      vertex.rates = ratesBetween(null, { at: Date.now(), counters: vertex.counters }, job.started ?? job.submitted);
      vertex.buffers = undefined;
      vertex.ended = at;
    } else if (state === 'RUNNING') vertex.started = at;
    vertex.state = state;
    if (error) vertex.error = error;
    if (isTerminal(job.state)) return;
    if (state === 'FAILED') this.failover(job, [vertex], error ?? `task ${taskId} failed`);
    // The JobManager marks the tasks it cancels itself: this cancel came from elsewhere (its TaskManager left the cluster).
    else if (state === 'CANCELED') this.failover(job, [vertex], `task ${taskId} was canceled on taskmanager ${vertex.taskManagerId}`);
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
      const url = `${tmUrl(tm)}/tasks/${encodeURIComponent(executionId(consumer, vertex.attempt))}/partitions`;
      callJson('POST', url, { partitionId, location }).catch((e: Error) => this.unreachable(tm, `could not tell task ${consumer} that partition ${partitionId} is ready`, e));
    }
    // A region reading it may now start (at once for a pipelined type across regions, such as hybrid).
    this.deployReadyRegions(job);
  }

  /**
   * Stores a task's collected records (msgpack, as its TaskManager packed them), keyed
   * by the task's index in stage and subtask order, so a sorted (range-partitioned)
   * result reads back sorted; a later attempt's replace an earlier one's. Resolves
   * once stored: the task reports FINISHED after.
   */
  async addResults(taskId: string, attempt: number, packed: Buffer): Promise<void> {
    const job = this.jobOfTask(taskId);
    if (!job?.graph || isTerminal(job.state) || job.graph.vertices.get(taskId)?.attempt !== attempt) return;
    const index = [...job.graph.vertices.keys()].indexOf(taskId);
    if (index < 0) return;
    await this.history.saveResults(job.seq, index, packed);
    job.resultBytes.set(index, packed.length);
    // The job ended while they were written (it failed or was canceled): they are not kept.
    if (isTerminal(job.state) && job.state !== 'FINISHED') await this.history.dropResults(job.seq);
  }

  /**
   * The next splits of a text source for a subtask's attempt (its request number
   * `request`, from 0): empty once its input is all handed out. Throws a
   * SplitRequestError for an attempt that no longer runs.
   */
  nextSplits(taskId: string, attempt: number, request: number): TextSplit[] {
    const job = this.jobOfTask(taskId);
    const vertex = job?.graph?.vertices.get(taskId);
    if (!job || !vertex || vertex.attempt !== attempt || isTerminal(job.state)) {
      throw new SplitRequestError(`task ${taskId} attempt ${attempt} is not running: it gets no splits`);
    }
    const source = job.graph!.stages.find((s) => s.name === vertex.stage)?.source;
    if (source === undefined || !('text' in source)) throw new SplitRequestError(`task ${taskId} does not read text`);
    let assigner = job.splits.get(vertex.stage);
    if (assigner === undefined) {
      assigner = new SplitAssigner(source.text, vertex.parallelism);
      job.splits.set(vertex.stage, assigner);
    }
    return assigner.next(vertex.subtask, attempt, request);
  }

  /** A TaskManager is gone with its tasks and partitions: every job it served restarts what it lost. */
  taskManagerLost(tm: TaskManagerInfo, reason: string): void {
    for (const job of [...this.jobs.values()]) {
      const graph = job.graph;
      if (isTerminal(job.state) || !graph) continue;
      const running = [...graph.vertices.values()].filter((v) => v.taskManagerId === tm.id && v.state !== 'CREATED' && !isTerminal(v.state));
      const needed = graph.regions.some((_, r) => !this.isFinished(job, r) && this.hasLostInput(job, r));
      if (running.length > 0 || needed) this.failover(job, running, reason, tm);
      else if (graph.slotOwners.includes(tm.id) && !job.pending) this.deployReadyRegions(job);
    }
    this.schedule();
  }

  /**
   * Restarts what `failed` (and lost partitions) touch, as the job's strategy allows,
   * or fails the job. Failures while a restart waits join it without counting again.
   */
  private failover(job: Job, failed: ExecutionVertex[], message: string, lost?: TaskManagerInfo): void {
    const graph = job.graph!;
    const time = Date.now();
    for (const v of failed) job.exceptions.push({ time, task: v.taskId, attempt: v.attempt, taskManager: v.taskManagerId, message });
    // Nothing ran on a lost TaskManager, but partitions still to be read were there.
    if (failed.length === 0) job.exceptions.push({ time, task: '', attempt: 0, taskManager: lost?.id ?? '', message });
    // A restart not yet carried out takes in what fails meanwhile (the same loss seen by another task, say).
    const joining = job.pending?.restart === true;
    const delay = joining ? 0 : restartDelay(job.restart, job.restarts + 1);
    if (delay === null) {
      const spent = job.restart.strategy === 'none' ? describeStrategy(job.restart) : `${job.restarts} restarts, ${describeStrategy(job.restart)}`;
      this.fail(job, `${message} (no restart left: ${spent})`);
      return;
    }
    const finished = (r: number): boolean => this.isFinished(job, r);
    const seeds = new Set(failed.map((v) => graph.regionOf(v.taskId)));
    if (lost) graph.regions.forEach((_, r) => !finished(r) && this.hasLostInput(job, r) && seeds.add(r));
    const restart = regionsToRestart(graph.links, (taskId) => graph.regionOf(taskId), seeds, finished, (link) => this.isLost(graph.linkPartition(link)));
    for (const r of restart) this.resetRegion(job, r);
    if (joining) return;
    job.restarts++;
    job.pending = { restart: true, since: null, timer: setTimeout(() => this.delayPassed(job), delay) };
  }

  private delayPassed(job: Job): void {
    if (!job.pending || isTerminal(job.state)) return;
    job.pending.since = Date.now();
    this.resume(job);
  }

  /** Moves slots off lost TaskManagers and deploys again; keeps waiting (up to the slot timeout) while slots are short. */
  private resume(job: Job): void {
    const pending = job.pending!;
    // A suspect TaskManager is being checked: it is either back or lost within the check's timeout.
    if (job.graph!.slotOwners.some((id) => this.registry.isSuspect(id))) return;
    const missing = this.relocateSlots(job);
    if (missing > 0) {
      if (Date.now() - pending.since! > this.slotTimeoutMs) {
        const free = this.registry.available().reduce((sum, tm) => sum + tm.freeSlots, 0);
        this.fail(job, `could not restart: ${missing} more free slot(s) needed on live taskmanagers, ${free} free after waiting ${this.slotTimeoutMs} ms`);
      }
      return;
    }
    job.pending = null;
    this.deployReadyRegions(job);
  }

  /** Gives each slot of the job on a gone TaskManager a free slot on a live one; returns how many it could not. */
  private relocateSlots(job: Job): number {
    const graph = job.graph!;
    let missing = 0;
    graph.slotOwners.forEach((owner, slot) => {
      if (this.registry.get(owner)) return;
      const target = this.registry.available().find((tm) => tm.freeSlots > 0);
      if (!target) {
        missing++;
        return;
      }
      target.freeSlots--;
      graph.moveSlot(slot, target.id);
    });
    return missing;
  }

  private isFinished(job: Job, region: number): boolean {
    const graph = job.graph!;
    return graph.regionVertices(region).every((v) => v.state === 'FINISHED');
  }

  /** Some partition the region reads from another was ready on a TaskManager that is gone. */
  private hasLostInput(job: Job, region: number): boolean {
    const graph = job.graph!;
    return graph.regionInputs[region].some((l) => this.isLost(graph.linkPartition(l)));
  }

  private isLost(partitionId: string): boolean {
    const partition = this.tracker.get(partitionId);
    return partition !== undefined && partition.ready && !this.registry.get(partition.location!.taskManagerId);
  }

  /** Stops a region's tasks and drops its partitions; its subtasks start again at their next attempt. */
  private resetRegion(job: Job, region: number): void {
    const graph = job.graph!;
    job.deployedRegions.delete(region);
    for (const vertex of graph.regionVertices(region)) {
      if (vertex.state === 'CREATED') continue;
      const tm = this.registry.get(vertex.taskManagerId);
      const partitions = graph.partitionsOf(vertex);
      for (const id of partitions) this.tracker.untrack(id);
      if (tm) {
        const execution = encodeURIComponent(executionId(vertex.taskId, vertex.attempt));
        callJson('POST', `${tmUrl(tm)}/tasks/${execution}/cancel`, {})
          .then(() => callJson('POST', `${tmUrl(tm)}/jobs/${job.id}/release`, { partitions }))
          .catch((e: Error) => this.unreachable(tm, `could not stop task ${vertex.taskId}`, e));
      }
      job.splits.get(vertex.stage)?.giveBack(vertex.subtask);
      vertex.attempt++;
      vertex.state = 'CREATED';
      vertex.error = undefined;
      vertex.started = undefined;
      vertex.ended = undefined;
      graph.trackPartitionsOf(vertex, this.tracker);
    }
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
    if (job.pending) return;
    // A TaskManager of the job is being checked, or left while nothing of it ran there: wait as a restart does.
    if (graph.slotOwners.some((id) => this.registry.isSuspect(id)) || this.relocateSlots(job) > 0) {
      job.pending = { restart: false, since: Date.now(), timer: null };
      return;
    }
    graph.regions.forEach((_, index) => {
      if (job.deployedRegions.has(index) || !graph.isDeployable(index, this.tracker)) return;
      job.deployedRegions.add(index);
      for (const vertex of graph.regionVertices(index)) if (!isTerminal(job.state) && vertex.state === 'CREATED') this.deploy(job, vertex);
    });
  }

  private deploy(job: Job, vertex: ExecutionVertex): void {
    const tm = this.registry.get(vertex.taskManagerId)!;
    vertex.state = 'DEPLOYING';
    const attempt = vertex.attempt;
    const descriptor = job.graph!.descriptor(vertex, this.tracker);
    callJson('POST', `${tmUrl(tm)}/tasks`, descriptor).catch((e: Error) => {
      const message = `could not deploy task ${vertex.taskId} to ${tm.id}: ${e.message}`;
      if (!(e instanceof HttpError)) this.registry.suspect(tm.id, message);
      // A TaskManager that answered, or that turns out alive, fails only this attempt.
      else if (vertex.attempt === attempt) this.taskStateChanged(vertex.taskId, { attempt, state: 'FAILED', error: message });
    });
  }

  /** A control call could not reach a TaskManager: it is checked, and declared lost if it does not answer. */
  private unreachable(tm: TaskManagerInfo, what: string, error: Error): void {
    if (error instanceof HttpError) console.error(`jobmanager: ${what}: ${error.message}`);
    else this.registry.suspect(tm.id, `${what}: ${error.message}`);
  }

  private onTaskFinished(job: Job): void {
    const vertices = [...job.graph!.vertices.values()];
    if (!vertices.every((v) => v.state === 'FINISHED')) return;
    try {
      this.commitOutputs(job);
    } catch (error) {
      this.fail(job, (error as Error).message);
      return;
    }
    this.end(job, 'FINISHED');
  }

  /** Renames each text sink's finished attempt into place: the output appears whole, once. */
  private commitOutputs(job: Job): void {
    const graph = job.graph!;
    for (const stage of graph.stages) {
      if (!stage.sink || !('text' in stage.sink)) continue;
      commitTextOutput(stage.sink.text, job.id, graph.verticesOf(stage.name).map((v) => v.attempt));
    }
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
    if (job.pending?.timer) clearTimeout(job.pending.timer);
    job.pending = null;
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
      // Every task and partition of the job lives on a TaskManager that gave it slots, now or before a restart.
      const stopped = [...graph.slots.keys()].map((id) => {
        const tm = this.registry.get(id);
        if (!tm) return Promise.resolve();
        const stop = state === 'FINISHED' ? Promise.resolve() : callJson('POST', `${tmUrl(tm)}/jobs/${job.id}/cancel`, {});
        return stop
          .then(() => callJson('POST', `${tmUrl(tm)}/jobs/${job.id}/release`, {}))
          .catch((e: Error) => this.unreachable(tm, `could not stop job ${job.id} on ${id}`, e));
      });
      // Once every task has stopped (its cancel answers then), no attempt writes any more: their files go.
      if (state !== 'FINISHED') void Promise.all(stopped).then(() => this.abortOutputs(graph));
      for (const [id, slots] of graph.slots) {
        const tm = this.registry.get(id);
        if (tm) tm.freeSlots += slots;
      }
    }
    setImmediate(() => this.schedule());
  }

  private abortOutputs(graph: ExecutionGraph): void {
    for (const stage of graph.stages) {
      if (stage.sink && 'text' in stage.sink) abortTextOutput(stage.sink.text, graph.jobId);
    }
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

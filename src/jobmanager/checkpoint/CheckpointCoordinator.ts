import fs from 'node:fs';
import path from 'node:path';
import { sourceSpec } from '../../connectors/Sources.js';
import type { AssignerSnapshot } from '../../connectors/SplitAssigner.js';
import type { HeldSplits } from '../../connectors/SourceSpec.js';
import { SpillwayError, type SerializedError } from '../../errors/Errors.js';
import { JobState } from '../../lifecycle/JobState.js';
import { TaskState } from '../../lifecycle/TaskState.js';
import { log } from '../../Logger.js';
import type { Barrier } from '../../network/Events.js';
import { executionId, type CheckpointAck, type TaskCheckpointConfig, type TaskRestore } from '../../rpc/TaskDeployment.js';
import { checkpointFolder, type SnapshotHandle } from '../../runtime/checkpoint/SnapshotFile.js';
import type { ExecutionVertex } from '../scheduler/ExecutionVertex.js';
import type { Job } from '../jobs/Job.js';
import type { JobHistory } from '../store/JobHistory.js';
import type { TaskManagerRegistry } from '../cluster/TaskManagerRegistry.js';
import { checkpointIntact, fingerprintOf, readMetadata, writeMetadata, type CheckpointMetadata } from './CheckpointMetadata.js';
import type { CheckpointOptions } from './CheckpointOptions.js';
import { addTask, CheckpointStatus, type CheckpointStats, type CheckpointSummary, type CheckpointsView } from './CheckpointStats.js';

/** Checkpoints shown by GET /jobs/:id/checkpoints, newest last: at most this many. */
const HISTORY = 100;

/** A checkpoint under way: what it waits for, and its stats as they come. */
interface Pending {
  id: number;
  triggered: number;
  savepoint: { directory: string; stop: boolean } | null;
  acks: Map<string, CheckpointAck>;
  /** The source stages' assignment at the trigger. */
  assigners: Map<string, AssignerSnapshot>;
  timer: NodeJS.Timeout;
  stats: CheckpointStats;
}

/** What the coordinator needs of the rest of the JobManager. */
export interface CoordinatorContext {
  registry: TaskManagerRegistry;
  history: JobHistory;
  /** Fails the job (too many failed checkpoints in a row). */
  fail(error: SerializedError): void;
  /** A stop-with-savepoint completed: the job's tasks finish on their own. */
  stopped?(id: number): void;
  /**
   * Records a checkpoint complete in the HA store, compare-and-set on the leader's epoch;
   * only once it resolves are the tasks told (sinks commit). Absent without HA.
   */
  confirm?(metadata: CheckpointMetadata): Promise<void>;
}

/**
 * A job's checkpoint coordinator (Flink's CheckpointCoordinator): every `interval` it
 * triggers a checkpoint at the job's sources (holding their split assignment still until
 * each has taken its snapshot), collects every task's acknowledgement, and declares the
 * checkpoint complete only when every task has stored its part: its `_metadata` is
 * written and recorded, the tasks are told (sinks commit), and checkpoints past `retain`
 * are deleted. One that times out or is declined is aborted and counted; more failures
 * in a row than `tolerableFailures` fail the job. Savepoints are checkpoints a user asks
 * for, copied to a folder of theirs and never deleted. On a restart, the tasks restore
 * from the latest completed checkpoint (an older retained one if it is damaged).
 */
export class CheckpointCoordinator {
  private nextId = 1;
  private pending: Pending | null = null;
  private readonly completed: CheckpointMetadata[] = [];
  private readonly stats: CheckpointStats[] = [];
  private interval: NodeJS.Timeout | null = null;
  private failures = 0;
  /** What a restart restores from: a completed checkpoint, or the savepoint the job was submitted from. */
  private restoreFrom: CheckpointMetadata | null;
  private stopped = false;
  /** Folders tasks wrote state to (a TaskManager's own --checkpoint-dir may differ from the job's). */
  private readonly stateFolders = new Set<string>();
  private readonly counts = { completed: 0, failed: 0 };

  constructor(
    private readonly job: Job,
    readonly options: CheckpointOptions & { directory: string },
    private readonly context: CoordinatorContext,
    /** The savepoint (or checkpoint) the job was submitted from, if any. */
    savepoint: CheckpointMetadata | null = null,
  ) {
    this.restoreFrom = savepoint;
    this.nextId = Math.max(savepoint === null ? 1 : savepoint.id + 1, job.firstCheckpointId ?? 1);
  }

  /** Starts the periodic trigger; checkpoints begin once every task of the job runs. */
  start(): void {
    this.interval = setInterval(() => this.periodic(), this.options.interval);
    this.interval.unref();
  }

  /** The job ended: nothing more is triggered; what is under way is aborted; its checkpoints (not savepoints) are deleted once its tasks stopped. */
  close(): void {
    this.stopped = true;
    if (this.interval) clearInterval(this.interval);
    this.interval = null;
    if (this.pending) this.abort(this.pending, 'the job ended', false);
  }

  /**
   * This JobManager stopped leading: nothing more is triggered or completed, and nothing
   * is told to the tasks or removed (the new leader restores the job from its checkpoints).
   */
  suspend(): void {
    this.stopped = true;
    if (this.interval) clearInterval(this.interval);
    this.interval = null;
    if (this.pending) clearTimeout(this.pending.timer);
    this.pending = null;
  }

  /** Deletes the job's checkpoint folders (and those its TaskManagers wrote state to): after its tasks have stopped writing. */
  removeFiles(): void {
    for (const folder of this.stateFolders) removeQuietly(path.dirname(folder));
    removeQuietly(path.join(this.options.directory, this.job.id));
    for (const checkpoint of this.completed.filter((c) => !c.savepoint)) this.dropRecord(checkpoint.id);
  }

  /** What a task is deployed with: where checkpoints go, and what it restores from. */
  forTask(vertex: ExecutionVertex): { checkpoints: TaskCheckpointConfig; restore?: TaskRestore } {
    const checkpoints = { directory: this.options.directory, alignmentTimeout: this.options.alignmentTimeout };
    const from = this.restoreFrom;
    const handles = from?.tasks[vertex.stage];
    if (from === null || handles === undefined) return { checkpoints };
    return { checkpoints, restore: { checkpointId: from.id, parallelism: from.parallelism[vertex.stage], handles } };
  }

  /**
   * The job restarts (a task failed, a TaskManager was lost): what is under way is
   * aborted, and the restarted tasks restore from the latest intact checkpoint; a source's
   * split assignment goes back to where it stood then.
   */
  restarting(): void {
    if (this.pending) this.abort(this.pending, 'the job restarts', false);
    for (;;) {
      const latest = this.completed.at(-1) ?? null;
      if (latest === null) break;
      const damage = checkpointIntact(latest);
      if (damage === undefined) {
        this.restoreFrom = latest;
        break;
      }
      log.warn({ job: this.job.id, checkpoint: latest.id }, `checkpoint ${latest.id} cannot be restored (${damage}): an older one is tried`);
      this.completed.pop();
    }
    if (this.restoreFrom !== null) this.restoreAssigners(this.restoreFrom);
  }

  /** A savepoint asked for: triggered now (a checkpoint under way is subsumed); its id. */
  savepoint(directory: string, stop: boolean): number {
    if (this.job.pending !== null) throw new SpillwayError('SPW_ERR_JOB_RESTARTING', `job ${this.job.id} is restarting: ask for the savepoint again once it runs`);
    if (!this.allRunning()) throw new SpillwayError('SPW_ERR_JOB_RESTARTING', `job ${this.job.id} is not running every task yet: ask for the savepoint again once it does`);
    if (this.pending) this.abort(this.pending, 'a savepoint was asked for', false);
    return this.trigger({ directory, stop });
  }

  /** A checkpoint's or savepoint's stats, by id. */
  statsOf(id: number): CheckpointStats | undefined {
    return this.stats.find((s) => s.id === id);
  }

  /** Every checkpoint of the job shown (the latest HISTORY), the counts and the latest completed. */
  view(): CheckpointsView {
    return { ...this.summary(), checkpoints: this.stats };
  }

  /** The counts and the latest completed checkpoint: what the job's record keeps. */
  summary(): CheckpointSummary {
    const latest = this.stats.findLast((s) => s.status === CheckpointStatus.COMPLETED);
    return { counts: { ...this.counts, inProgress: this.pending ? 1 : 0 }, latest };
  }

  /** A task stored its part of checkpoint `ack.checkpointId`. */
  acknowledge(vertex: ExecutionVertex, attempt: number, ack: CheckpointAck): void {
    const pending = this.pending;
    if (pending === null || pending.id !== ack.checkpointId || vertex.attempt !== attempt) {
      // Written after its checkpoint was aborted: nothing will read it.
      if (!this.completed.some((c) => c.id === ack.checkpointId)) removeLateState(ack);
      return;
    }
    pending.acks.set(vertex.taskId, ack);
    this.stateFolders.add(path.dirname(ack.handle.path));
    addTask(pending.stats, vertex.taskId, { acknowledged: Date.now(), alignmentMs: ack.alignmentMs, startDelayMs: ack.startDelayMs, bytes: ack.handle.bytes, inFlightBytes: ack.inFlightBytes, unaligned: ack.unaligned });
    // A source's asks for splits go on once it has its snapshot.
    this.job.splits.get(vertex.stage)?.release(vertex.subtask);
    if (pending.acks.size === this.job.graph!.vertices.size) this.complete(pending);
  }

  /** A task could not take part in checkpoint `id`: the checkpoint is aborted. */
  decline(vertex: ExecutionVertex, attempt: number, id: number, error: SerializedError): void {
    const pending = this.pending;
    if (pending === null || pending.id !== id || vertex.attempt !== attempt) return;
    // Subsumed or canceled is no failure of the checkpoint; one that could not be written is.
    this.abort(pending, `task ${vertex.taskId} declined it: ${error.message}`, error.code === 'SPW_ERR_CHECKPOINT_IO');
  }

  private periodic(): void {
    if (this.stopped || this.pending !== null || !this.allRunning()) return;
    this.trigger(null);
  }

  /**
   * Every task runs (none finished, none restarting) and every source of splits has
   * asked for its first (its assignment exists to be snapshotted and held): a
   * checkpoint can cut the whole job.
   */
  private allRunning(): boolean {
    const graph = this.job.graph;
    if (this.job.state !== JobState.RUNNING || this.job.pending !== null || graph === null) return false;
    if (graph.stages.some((stage) => stage.source && sourceSpec(stage.source).splits && !this.job.splits.has(stage.name))) return false;
    return [...graph.vertices.values()].every((v) => v.state === TaskState.RUNNING);
  }

  private trigger(savepoint: Pending['savepoint']): number {
    const graph = this.job.graph!;
    const id = this.nextId++;
    const triggered = Date.now();
    const assigners = new Map<string, AssignerSnapshot>();
    for (const stage of graph.stages) {
      const assigner = this.job.splits.get(stage.name);
      if (stage.source && assigner) assigners.set(stage.name, assigner.snapshotAndHold(graph.stageParallelism(stage.name)));
    }
    const stats: CheckpointStats = { id, status: CheckpointStatus.IN_PROGRESS, savepoint: savepoint !== null, triggered, tasks: {}, bytes: 0, inFlightBytes: 0, alignmentMs: 0, startDelayMs: 0, unaligned: false };
    this.stats.push(stats);
    if (this.stats.length > HISTORY) this.stats.shift();
    const timer = setTimeout(() => this.pending?.id === id && this.abort(this.pending, `it took longer than ${this.options.timeout} ms`, true), this.options.timeout);
    timer.unref();
    this.pending = { id, triggered, savepoint, acks: new Map(), assigners, timer, stats };
    const barrier: Barrier = { id, timestamp: triggered, unaligned: this.options.mode === 'unaligned' && savepoint === null, savepoint: savepoint !== null, stop: savepoint?.stop ?? false };
    for (const stage of graph.stages) {
      if (!stage.source) continue;
      for (const vertex of graph.verticesOf(stage.name)) {
        const tm = this.context.registry.get(vertex.taskManagerId);
        if (!tm) continue;
        this.context.registry.gateway(tm).triggerCheckpoint(executionId(vertex.taskId, vertex.attempt), barrier).catch((e: Error) => {
          if (this.pending?.id === id) this.abort(this.pending, `its trigger could not reach ${vertex.taskId}: ${e.message}`, false);
        });
      }
    }
    log.debug({ job: this.job.id, checkpoint: id, savepoint: savepoint !== null }, 'checkpoint triggered');
    return id;
  }

  private complete(pending: Pending): void {
    clearTimeout(pending.timer);
    const graph = this.job.graph!;
    const tasks: CheckpointMetadata['tasks'] = {};
    const parallelism: Record<string, number> = {};
    const sources: CheckpointMetadata['sources'] = {};
    for (const stage of graph.stages) {
      parallelism[stage.name] = graph.stageParallelism(stage.name);
      tasks[stage.name] = graph.verticesOf(stage.name).map((v) => pending.acks.get(v.taskId)?.handle ?? null);
      const assigner = pending.assigners.get(stage.name);
      if (assigner === undefined) continue;
      const held = graph.verticesOf(stage.name).map((v) => ({ subtask: v.subtask, ...((pending.acks.get(v.taskId)?.sourcePosition as HeldSplits | undefined) ?? { splits: [], received: 0 }) }));
      sources[stage.name] = { assigner, held };
    }
    const folder = checkpointFolder(this.options.directory, this.job.id, pending.id);
    let metadata: CheckpointMetadata = {
      id: pending.id,
      jobId: this.job.id,
      triggered: pending.triggered,
      completed: Date.now(),
      savepoint: pending.savepoint !== null,
      folder,
      fingerprint: fingerprintOf(graph.stages),
      parallelism,
      tasks,
      sources,
      bytes: [...pending.acks.values()].reduce((sum, ack) => sum + ack.handle.bytes, 0),
    };
    try {
      if (pending.savepoint !== null) metadata = copyToSavepoint(metadata, pending.savepoint.directory);
      writeMetadata(metadata);
    } catch (error) {
      this.fail(pending, (error as Error).message, true);
      return;
    }
    const confirm = this.context.confirm;
    if (confirm === undefined) {
      this.pending = null;
      this.completeRecorded(pending, metadata);
      return;
    }
    // Under way until the HA store has it: nothing else is triggered meanwhile.
    confirm(metadata).then(
      () => {
        if (this.pending !== pending || this.stopped) return;
        this.pending = null;
        this.completeRecorded(pending, metadata);
      },
      (error: Error) => {
        if (this.pending === pending && !this.stopped) this.fail(pending, `the HA store did not record it: ${error.message}`, false);
      },
    );
  }

  /** A checkpoint stored and recorded: counted, kept, and its tasks told (sinks commit). */
  private completeRecorded(pending: Pending, metadata: CheckpointMetadata): void {
    const stats = pending.stats;
    stats.status = CheckpointStatus.COMPLETED;
    stats.completed = metadata.completed;
    stats.durationMs = metadata.completed - pending.triggered;
    stats.path = metadata.folder;
    this.counts.completed++;
    this.failures = 0;
    this.completed.push(metadata);
    this.context.history.saveCheckpoint(this.job.seq, metadata).catch((error: Error) => log.warn({ job: this.job.id, checkpoint: metadata.id, error: error.message }, 'checkpoint not recorded in the store'));
    this.notify(pending.id, true);
    this.retain();
    if (pending.savepoint?.stop) this.context.stopped?.(pending.id);
    log.debug({ job: this.job.id, checkpoint: pending.id, durationMs: stats.durationMs, bytes: metadata.bytes }, 'checkpoint completed');
  }

  /** Deletes completed checkpoints (not savepoints) past `retain`, oldest first. */
  private retain(): void {
    const checkpoints = this.completed.filter((c) => !c.savepoint);
    for (const old of checkpoints.slice(0, Math.max(0, checkpoints.length - this.options.retain))) {
      this.completed.splice(this.completed.indexOf(old), 1);
      removeCheckpoint(old);
      this.dropRecord(old.id);
    }
  }

  private abort(pending: Pending, reason: string, counts: boolean): void {
    this.fail(pending, reason, counts);
  }

  private fail(pending: Pending, reason: string, counts: boolean): void {
    clearTimeout(pending.timer);
    if (this.pending === pending) this.pending = null;
    for (const assigner of this.job.splits.values()) assigner.release();
    pending.stats.status = CheckpointStatus.FAILED;
    pending.stats.failure = reason;
    this.counts.failed++;
    this.notify(pending.id, false);
    removeQuietly(checkpointFolder(this.options.directory, this.job.id, pending.id));
    for (const ack of pending.acks.values()) removeQuietly(path.dirname(ack.handle.path));
    log.info({ job: this.job.id, checkpoint: pending.id }, `checkpoint ${pending.id} aborted: ${reason}`);
    if (!counts || this.stopped) return;
    if (++this.failures > this.options.tolerableFailures) {
      this.context.fail({ code: 'SPW_ERR_CHECKPOINT_FAILED', message: `${this.failures} checkpoints in a row failed (${this.options.tolerableFailures} tolerated); the last: ${reason}` });
    }
  }

  private notify(id: number, completed: boolean): void {
    const graph = this.job.graph;
    if (graph === null) return;
    for (const tmId of new Set([...graph.vertices.values()].map((v) => v.taskManagerId))) {
      const tm = this.context.registry.get(tmId);
      if (tm) this.context.registry.gateway(tm).notifyCheckpoint(this.job.id, id, completed).catch(() => undefined);
    }
  }

  /** A restored checkpoint's split assignment, on the source stages' assigners. */
  private restoreAssigners(from: CheckpointMetadata): void {
    for (const [stage, { assigner, held }] of Object.entries(from.sources)) this.job.splits.get(stage)?.restore(assigner, held);
  }

  /** The split assignment a restored job's sources start from (their assigners are made at their first ask). */
  /** Forgets a deleted checkpoint in the store; a store that fails is logged, not thrown at a caller that cannot wait. */
  private dropRecord(id: number): void {
    this.context.history.dropCheckpoint(this.job.seq, id).catch((error: Error) => log.warn({ job: this.job.id, checkpoint: id, error: error.message }, 'checkpoint not dropped from the store'));
  }

  restoredAssignment(stage: string): CheckpointMetadata['sources'][string] | undefined {
    return this.restoreFrom?.sources[stage];
  }
}

/** Deletes a checkpoint's folder and those its state files are in. */
function removeCheckpoint(checkpoint: CheckpointMetadata): void {
  for (const handles of Object.values(checkpoint.tasks)) for (const handle of handles) if (handle) removeQuietly(path.dirname(handle.path));
  removeQuietly(checkpoint.folder);
}

/**
 * Removes a file or folder, retrying while a task still writes into it (ENOTEMPTY, EBUSY);
 * what stays is logged: a leftover file must not take the JobManager down.
 */
/**
 * A late acknowledgement's state file, with the checkpoint's folder: the abort removed the
 * folder, and the task's write made it again.
 */
function removeLateState(ack: CheckpointAck): void {
  const folder = path.dirname(ack.handle.path);
  removeQuietly(path.basename(folder) === `chk-${ack.checkpointId}` ? folder : ack.handle.path);
}

function removeQuietly(target: string): void {
  try {
    fs.rmSync(target, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
  } catch (error) {
    log.warn({ path: target, error: (error as Error).message }, 'checkpoint files not removed');
  }
}

/** Copies a checkpoint's state files into a savepoint's folder (`<directory>/savepoint-<job>-<id>`), its handles then pointing there. */
function copyToSavepoint(metadata: CheckpointMetadata, directory: string): CheckpointMetadata {
  const folder = path.join(directory, `savepoint-${metadata.jobId}-${metadata.id}`);
  fs.mkdirSync(folder, { recursive: true });
  const tasks: CheckpointMetadata['tasks'] = {};
  for (const [stage, handles] of Object.entries(metadata.tasks)) {
    tasks[stage] = handles.map((handle) => {
      if (handle === null) return null;
      const target = path.join(folder, path.basename(handle.path));
      fs.copyFileSync(handle.path, target);
      return { ...handle, path: target };
    });
  }
  removeQuietly(metadata.folder);
  return { ...metadata, folder, tasks };
}

/**
 * A savepoint or checkpoint folder's metadata, for a job submitted from it. A savepoint
 * holds all its state files (copyToSavepoint): they are read from where it is now, so
 * that a savepoint moved or copied restores from its own files, as Flink's relocatable
 * savepoints do. A retained checkpoint's files stay where its tasks wrote them.
 */
export function savepointAt(folder: string): CheckpointMetadata {
  const metadata = readMetadata(folder);
  if (!metadata.savepoint) return metadata;
  const here = (handle: SnapshotHandle | null): SnapshotHandle | null => handle && { ...handle, path: path.join(folder, path.basename(handle.path)) };
  const tasks = Object.fromEntries(Object.entries(metadata.tasks).map(([stage, handles]) => [stage, handles.map(here)]));
  return { ...metadata, folder, tasks };
}

import fs from 'node:fs';
import { codeOf, SpillwayError, type ErrorCode, type SerializedError } from '../errors/Errors.js';
import { TaskState, type TaskEndState } from '../lifecycle/TaskState.js';
import { emptyCounters, type PartitionLocation, type Split, type TaskCounters, type TaskDeploymentDescriptor } from '../rpc/TaskDeployment.js';
import type { ResultPartition } from '../network/networkThread/partition/ResultPartition.js';
import type { ShuffleEnvironment } from '../network/networkThread/ShuffleEnvironment.js';
import type { EntrySink, HandoverPort } from '../network/handover/Handover.js';
import { NetworkEnd, type TaskBufferStats } from '../network/networkThread/NetworkEnd.js';
import type { ManagedMemorySpec } from '../runtime/memory/ManagedMemory.js';
import type { CheckpointMessage } from './Task.js';
import type { CheckpointAck } from './TaskCheckpoints.js';
import type { FromTaskThread, ToTaskThread } from './TaskThreadMessages.js';
import type { TaskThread, TaskThreadPool } from './TaskThreadPool.js';

/** What a task's host tells its TaskManager. */
export interface TaskHostListener {
  partitionReady(partitionId: string): void;
  /** Delivers a collect sink's packed records (all, or part `part`); the task fails if this rejects. */
  collected(records: Uint8Array, part?: number, origin?: number): Promise<void>;
  /** Answers the task's request number `request` (0, 1, ...) for the next splits of its source. */
  nextSplits(request: number): Promise<Split[]>;
  /** The task stored its part of a checkpoint. */
  checkpointAcknowledged(ack: CheckpointAck): void;
  /** The task could not take part in a checkpoint. */
  checkpointDeclined(checkpointId: number, error: SerializedError): void;
}

export interface TaskOutcome {
  state: TaskEndState;
  /** Why it did not finish, with its code; null once FINISHED. */
  error: SerializedError | null;
}

/**
 * The network thread's side of one task: it creates the task's partitions and
 * reserves its input pools (so that a task short of network memory fails at
 * deployment), runs the task in a thread from the pool, serves its buffers, opens
 * its inputs once their producers are known, and ends it. A task that does not
 * stop within the cancel timeout of a cancel is terminated; whatever way a task
 * ends, its buffers are back, its operators' spill files gone and, unless it
 * finished, its partitions released before its outcome is known.
 */
export class TaskHost {
  counters: TaskCounters = emptyCounters();
  private readonly partitions: ResultPartition[] = [];
  private readonly network: NetworkEnd;
  private readonly locations: (PartitionLocation | null)[][];
  private readonly requestedInputs = new Set<number>();
  private thread: TaskThread | null = null;
  private port: HandoverPort | null = null;
  private outcome: TaskOutcome | null = null;
  private resolveOutcome: (outcome: TaskOutcome) => void = () => {};
  private readonly ended: Promise<TaskOutcome>;
  private cancelTimer: NodeJS.Timeout | null = null;
  private canceled = false;
  private splitRequests = 0;

  constructor(
    readonly descriptor: TaskDeploymentDescriptor,
    private readonly env: ShuffleEnvironment,
    private readonly threads: TaskThreadPool,
    private readonly taskManagerId: string,
    private readonly cancelTimeoutMs: number,
    private readonly listener: TaskHostListener,
    /** The task's slot budget and spill folder; the folder is removed when the task ends. */
    private readonly memory: ManagedMemorySpec,
  ) {
    this.ended = new Promise((resolve) => (this.resolveOutcome = resolve));
    this.locations = descriptor.inputs.map((gate) => gate.channels.map((c) => c.location));
    try {
      for (const out of descriptor.outputs) {
        const partition = env.createPartition(out.partitionId, out.type, out.numSubpartitions);
        this.partitions.push(partition);
        // The seed's degree of freedom: a partition is announced when its consumers may start reading it.
        if (partition.type.isPipelined) partition.onFirstBuffer = () => listener.partitionReady(partition.id);
      }
      this.network = new NetworkEnd(env, this.handoverPort, this.partitions, descriptor.inputs.map((gate) => gate.channels.length), descriptor.taskId, {
        inputRequested: (g) => {
          this.requestedInputs.add(g);
          this.openInputs();
        },
        partitionFinished: (p) => {
          if (!this.partitions[p].type.isPipelined) listener.partitionReady(this.partitions[p].id);
        },
        overtaken: (partition, buffers) => this.post({ type: 'overtaken', partition, buffers }),
      });
    } catch (error) {
      this.releasePartitions(error as Error);
      throw new SpillwayError(codeOf(error), `task ${descriptor.taskId} cannot be deployed: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Where the task's buffers are now (its partitions, and what its inputs lent it). */
  bufferStats(): TaskBufferStats {
    return this.network.bufferStats();
  }

  get isCanceled(): boolean {
    return this.canceled;
  }

  /** Runs the task in a thread; resolves with how it ended. */
  run(): Promise<TaskOutcome> {
    if (this.canceled) this.end(this.failure('SPW_ERR_TASK_CANCELED', `task ${this.descriptor.taskId} was canceled`));
    if (this.outcome !== null) return this.ended;
    const { job, stage } = this.descriptor;
    const thread = this.threads.acquire(`${job.builtin ?? job.module}/${stage}`);
    this.thread = thread;
    this.port = thread.link.port(thread.worker);
    thread.link.handler = (entries) => this.network.handle(entries);
    thread.worker.on('message', this.onMessage);
    thread.worker.on('error', this.onError);
    thread.worker.on('exit', this.onExit);
    this.post({ type: 'run', descriptor: this.descriptor, memory: this.memory });
    return this.ended;
  }

  /** The network end writes through the thread's port while the task runs; before and after, nowhere. */
  private readonly handoverPort: EntrySink = { add: (entry) => this.port?.add(entry) };

  /** Asks the task to stop, and terminates its thread if it has not within the cancel timeout. */
  /** A checkpoint's trigger, completion or abort, for the task. */
  checkpoint(message: CheckpointMessage): void {
    this.post({ type: 'checkpoint', message });
  }

  cancel(): void {
    if (this.canceled || this.outcome !== null) return;
    this.canceled = true;
    if (this.thread === null) return;
    this.post({ type: 'cancel' });
    this.cancelTimer = setTimeout(() => void this.terminate(), this.cancelTimeoutMs);
  }

  /** Ends the task's thread now, whatever it is doing: a cancel that was not heeded in time. */
  private async terminate(): Promise<void> {
    const thread = this.thread;
    if (thread === null || this.outcome !== null) return;
    this.detach(thread);
    await this.threads.terminate(thread);
    this.end(this.failure('SPW_ERR_TASK_CANCELED', `task ${this.descriptor.taskId} did not stop within ${this.cancelTimeoutMs} ms of its cancel and was terminated`));
  }

  /** Resolves with the outcome, however the task ends. */
  whenEnded(): Promise<TaskOutcome> {
    return this.ended;
  }

  /** The JobManager tells where a producer's partition is, once it is ready. */
  updatePartition(partitionId: string, location: PartitionLocation): void {
    this.descriptor.inputs.forEach((gate, g) =>
      gate.channels.forEach((channel, c) => {
        if (channel.partitionId === partitionId) this.locations[g][c] = location;
      }),
    );
    this.openInputs();
  }

  private post(message: ToTaskThread): void {
    this.port?.post(message);
  }

  /** Opens every input the task asked for whose producers are all known. */
  private openInputs(): void {
    for (const g of this.requestedInputs) {
      if (!this.locations[g].every((l) => l !== null)) continue;
      this.requestedInputs.delete(g);
      const sources = this.descriptor.inputs[g].channels.map((channel, c) => {
        const location = this.locations[g][c]!;
        const local = location.taskManagerId === this.taskManagerId;
        return {
          address: { partitionId: channel.partitionId, subpartition: channel.subpartition },
          remote: local ? null : { host: location.host, port: location.dataPort },
        };
      });
      this.network.attachInput(g, sources);
    }
  }

  private readonly onMessage = (message: unknown): void => {
    // Entries published before this message are read first.
    this.thread?.link.drain();
    const control = message as FromTaskThread;
    if (control.type === 'counters') this.counters = control.counters;
    else if (control.type === 'collect') {
      this.listener.collected(control.records, control.part, control.origin).then(
        () => this.post({ type: 'collected', error: null }),
        (error: Error) => this.post({ type: 'collected', error: { code: codeOf(error, 'SPW_ERR_CONTROL_CALL'), message: `could not deliver the collected records: ${error.message}` } }),
      );
    } else if (control.type === 'checkpointAck') this.listener.checkpointAcknowledged(control.ack);
    else if (control.type === 'checkpointDecline') this.listener.checkpointDeclined(control.checkpointId, control.error);
    else if (control.type === 'splits') {
      this.listener.nextSplits(this.splitRequests++).then(
        (splits) => this.post({ type: 'splits', splits, error: null }),
        (error: Error) =>
          this.post({ type: 'splits', splits: [], error: { code: codeOf(error, 'SPW_ERR_CONTROL_CALL'), message: `could not get the next splits of the input: ${error.message}` } }),
      );
    } else {
      this.counters = control.counters;
      const thread = this.thread!;
      this.detach(thread);
      this.end({ state: control.state, error: control.error });
      this.threads.release(thread, control.modules);
    }
  };

  private readonly onError = (error: Error & { code?: string }): void => {
    const message =
      error.code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? `task thread ran out of memory (its heap limit is the TaskManager's --task-heap): ${error.message}`
        : `task thread failed: ${error.message}`;
    this.detachAndEnd(this.failure('SPW_ERR_TASK_THREAD', message));
  };

  private readonly onExit = (code: number): void => {
    this.detachAndEnd(this.failure('SPW_ERR_TASK_THREAD', `task thread exited with code ${code}`));
  };

  /** The outcome of a task that did not finish: CANCELED once it was asked to stop, FAILED with `code` otherwise. */
  private failure(code: ErrorCode, message: string): TaskOutcome {
    if (this.canceled) return { state: TaskState.CANCELED, error: { code: 'SPW_ERR_TASK_CANCELED', message } };
    return { state: TaskState.FAILED, error: { code, message } };
  }

  /** The thread died: it is not reused, and its memory is no longer touched. */
  private detachAndEnd(outcome: TaskOutcome): void {
    const thread = this.thread;
    if (thread === null) return;
    this.detach(thread);
    void this.threads.terminate(thread).then(() => this.end(outcome));
  }

  /** The thread no longer serves this task: nothing more goes to it or comes from it for this task. */
  private detach(thread: TaskThread): void {
    thread.worker.off('message', this.onMessage);
    thread.worker.off('error', this.onError);
    thread.worker.off('exit', this.onExit);
    thread.link.handler = null;
    this.port?.discard();
    this.port = null;
    this.thread = null;
  }

  /** Takes back every buffer the thread held, removes its spill files and, unless the task finished, releases its partitions. */
  private end(outcome: TaskOutcome): void {
    if (this.outcome !== null) return;
    this.outcome = outcome;
    if (this.cancelTimer !== null) clearTimeout(this.cancelTimer);
    this.network.reclaim();
    // The thread removes its spill files as its task ends; a terminated thread could not.
    fs.rmSync(this.memory.spillDir, { recursive: true, force: true });
    if (outcome.state !== TaskState.FINISHED) {
      this.releasePartitions(new SpillwayError('SPW_ERR_PARTITION_RELEASED', `task ${this.descriptor.taskId} ${outcome.state === TaskState.FAILED ? 'failed' : 'was canceled'}`));
    }
    this.resolveOutcome(outcome);
  }

  private releasePartitions(cause: Error): void {
    for (const partition of this.partitions) this.env.partitions.release(partition.id, cause);
  }
}

import type { SinkWriter } from '../connectors/SinkSpec.js';
import { serializeError, SpillwayError, type SerializedError } from '../errors/Errors.js';
import type { Barrier } from '../network/Events.js';
import type { BarrierTiming, ChannelState, CheckpointActions } from '../runtime/checkpoint/BarrierHandler.js';
import { inFlightSize, type InputInFlight } from '../runtime/checkpoint/InFlightData.js';
import type { OperatorSnapshot } from '../runtime/checkpoint/OperatorState.js';
import { checkpointFolder, writeSnapshot, type TaskSnapshot } from '../runtime/checkpoint/SnapshotFile.js';
import type { StreamContext } from '../runtime/StreamContext.js';
import type { TaskOutput } from './TaskOutput.js';

export type { CheckpointAck };

import type { CheckpointAck, TaskCheckpointConfig } from '../rpc/TaskDeployment.js';

/** Where a task's checkpoint reports go (its TaskManager, then the JobManager). */
export interface CheckpointListener {
  acknowledged(ack: CheckpointAck): void;
  declined(checkpointId: number, error: SerializedError): void;
}

/** A snapshot taken and not yet written: what its write waits for. */
interface Taken {
  snapshot: TaskSnapshot;
  barrier: Barrier;
  timing: BarrierTiming;
}

/**
 * A task's part in checkpoints: its snapshot at the barrier (every stateful operator's
 * state, a source's position, a sink's transactions), the barrier sent on, the state
 * written asynchronously while the task goes on, and the acknowledgement; then, as the
 * JobManager says, a completed checkpoint's transactions committed, or an aborted one
 * forgotten. At a source the trigger waits for the reader's next resumable point.
 */
export class TaskCheckpoints implements CheckpointActions {
  /** A source's trigger waiting for the reader's next resumable point, and when it came. */
  private triggered: { barrier: Barrier; startDelayMs: number } | null = null;
  /** Snapshots taken whose unaligned in-flight data at the inputs is not all in yet. */
  private readonly awaitingChannels = new Map<number, Taken>();
  /** A sink's prepared transactions not known to be committed, by checkpoint, oldest first. */
  private readonly pending: [number, unknown][];
  /** The stop-with-savepoint this task stopped for, until its completion (or abort) is known. */
  private stopping: { id: number; done: Promise<void>; settle: (error: Error | null) => void } | null = null;
  /** Every write not ended yet: a task ends only after them. */
  private readonly writes = new Set<Promise<void>>();
  /** Set once a stop-with-savepoint was taken: the task reads no more. */
  stopped = false;
  /** Checkpoints this task acknowledged, and how many it declined. */
  acknowledged = 0;
  declined = 0;

  constructor(
    private readonly jobId: string,
    private readonly stage: string,
    private readonly subtask: number,
    private readonly parallelism: number,
    private readonly config: TaskCheckpointConfig,
    private readonly stream: StreamContext,
    private readonly output: () => TaskOutput,
    private readonly sink: () => SinkWriter | null,
    private readonly listener: CheckpointListener,
    /** Restoring: a sink's transactions the checkpoint kept, to commit before anything new. */
    pending: readonly [number, unknown][],
  ) {
    this.pending = [...pending];
  }

  /** The JobManager triggers a checkpoint at this source: taken at the reader's next resumable point. */
  trigger(barrier: Barrier): void {
    const waiting = this.triggered?.barrier;
    if (waiting !== undefined) this.decline(waiting.id, `checkpoint ${waiting.id} was subsumed by checkpoint ${barrier.id} before the source could take it`);
    // A source's start delay is the trigger's way to it; its wait for a resumable point is part of the checkpoint's duration.
    this.triggered = { barrier, startDelayMs: Math.max(0, Date.now() - barrier.timestamp) };
  }

  /** Whether a source's trigger waits for a resumable point. */
  get waiting(): boolean {
    return this.triggered !== null;
  }

  /** A source's reader is at a resumable point, `position`: a waiting trigger is taken here. */
  atResumable(position: unknown): void | Promise<void> {
    const triggered = this.triggered;
    if (triggered === null) return;
    this.triggered = null;
    return this.take(triggered.barrier, position, { startDelayMs: triggered.startDelayMs, alignmentMs: 0 });
  }

  snapshot(barrier: Barrier, timing: BarrierTiming): void | Promise<void> {
    return this.take(barrier, undefined, timing);
  }

  channelState(id: number, channels: ChannelState[], inputs: InputInFlight[], bytes: number): void {
    const taken = this.awaitingChannels.get(id);
    if (taken === undefined) return;
    this.awaitingChannels.delete(id);
    if (channels.length > 0) taken.snapshot.channels = channels;
    if (inputs.length > 0) taken.snapshot.inputs = inputs;
    this.write(taken, bytes + inFlightSize(taken.snapshot.outputs ?? []));
  }

  decline(id: number, reason: string): void {
    this.awaitingChannels.delete(id);
    this.declined++;
    this.listener.declined(id, serializeError(new SpillwayError('SPW_ERR_CHECKPOINT_DECLINED', reason), 'SPW_ERR_CHECKPOINT_DECLINED'));
  }

  /** Checkpoint `id` completed: a sink commits the transactions it covers, in order. */
  async complete(id: number): Promise<void> {
    const sink = this.sink();
    while (this.pending.length > 0 && this.pending[0][0] <= id) {
      const [checkpointId, transaction] = this.pending[0];
      if (sink?.commit) await sink.commit(checkpointId, transaction);
      this.pending.shift();
    }
    if (this.stopping?.id === id) this.stopping.settle(null);
  }

  /** Checkpoint `id` was aborted: its transaction stays pending, committed by a later one. A stop it was for cannot go on. */
  abort(id: number): void {
    this.awaitingChannels.delete(id);
    if (this.stopping?.id === id) this.stopping.settle(new SpillwayError('SPW_ERR_CHECKPOINT_DECLINED', `the savepoint ${id} the job was to stop at was aborted`));
  }

  /** Commits what a restored checkpoint's sink had prepared and may not have committed, before anything new. */
  async commitRestored(): Promise<void> {
    const sink = this.sink();
    for (const [id, transaction] of this.pending.splice(0)) if (sink?.commit) await sink.commit(id, transaction);
  }

  /** A task that stopped for a savepoint finishes once it completed (its sinks committed); rejects if it was aborted. */
  async stoppedAndCommitted(): Promise<void> {
    await this.drained();
    if (this.stopping !== null) await this.stopping.done;
  }

  /** Resolves once every state write of this task has ended. */
  async drained(): Promise<void> {
    while (this.writes.size > 0) await Promise.allSettled([...this.writes]);
  }

  /**
   * The snapshot, between records: every stateful operator's state and the sink's new
   * transaction, then the barrier on to the outputs (ahead of what they queued, unaligned,
   * whose copies join the snapshot); its write goes on while the task does.
   */
  private async take(barrier: Barrier, sourcePosition: unknown, timing: BarrierTiming): Promise<void> {
    const operators: Record<string, OperatorSnapshot> = {};
    for (const [owner, operator] of this.stream.stateful) operators[owner] = operator.snapshot();
    const sink = this.sink();
    if (sink?.prepareCommit) this.pending.push([barrier.id, await sink.prepareCommit(barrier.id)]);
    const snapshot: TaskSnapshot = { checkpointId: barrier.id, stage: this.stage, subtask: this.subtask, parallelism: this.parallelism, operators, source: sourcePosition, sink: [...this.pending] };
    const outputs = await this.output().barrier(barrier);
    if (outputs.length > 0) snapshot.outputs = outputs;
    if (barrier.stop) this.stopAt(barrier.id);
    const taken: Taken = { snapshot, barrier, timing };
    // An unaligned checkpoint of a task with inputs is written once every input's barrier came.
    if (barrier.unaligned && sourcePosition === undefined && this.hasInputs) this.awaitingChannels.set(barrier.id, taken);
    else this.write(taken, inFlightSize(outputs));
  }

  /** Whether the task reads inputs (not a source): only then does it store in-flight data at its inputs. */
  hasInputs = false;

  /** Writes a snapshot taken, whose in-flight data (unaligned) came in buffers of `inFlightBytes`, and acknowledges it. */
  private write(taken: Taken, inFlightBytes: number): void {
    const { snapshot, barrier, timing } = taken;
    const { alignmentMs, startDelayMs } = timing;
    const folder = checkpointFolder(this.config.directory, this.jobId, barrier.id);
    const written = writeSnapshot(folder, snapshot).then(
      (handle) => {
        this.acknowledged++;
        this.listener.acknowledged({ checkpointId: barrier.id, handle, alignmentMs, startDelayMs, inFlightBytes, unaligned: barrier.unaligned, sourcePosition: snapshot.source });
      },
      (error: unknown) => {
        this.declined++;
        this.listener.declined(barrier.id, serializeError(error, 'SPW_ERR_CHECKPOINT_IO'));
      },
    );
    this.writes.add(written);
    void written.finally(() => this.writes.delete(written));
  }

  private stopAt(id: number): void {
    this.stopped = true;
    let settle!: (error: Error | null) => void;
    const done = new Promise<void>((resolve, reject) => {
      settle = (error) => (error === null ? resolve() : reject(error));
    });
    done.catch(() => undefined);
    this.stopping = { id, done, settle };
  }
}

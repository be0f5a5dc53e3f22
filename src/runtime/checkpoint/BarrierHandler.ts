import type { InputGate } from '../../network/consumer/InputGate.js';
import type { Barrier } from '../../network/serialization/Events.js';

/** The records of one input channel an unaligned checkpoint stores: those that belong before its barrier and come after its snapshot. */
export interface ChannelState {
  input: number;
  channel: number;
  /** The records, each after its event timestamp where its edge carries one. */
  records: unknown[];
}

/** How a checkpoint went at a task's inputs, as its acknowledgement reports it. */
export interface BarrierTiming {
  /** Ms from the checkpoint's trigger (the barrier's timestamp) until the task's first barrier came. */
  startDelayMs: number;
  /** Ms from the first barrier until the snapshot: until the last came (aligned), or until the alignment timed out; about 0 unaligned. */
  alignmentMs: number;
}

/** What a task does when its inputs' barriers say so. */
export interface CheckpointActions {
  /**
   * Takes the task's snapshot for `barrier` now, between records, and sends the barrier
   * on: behind what the task emitted (aligned), or ahead of it (unaligned). The state is
   * written afterwards; an unaligned one waits for `channelState`.
   */
  snapshot(barrier: Barrier, timing: BarrierTiming): void | Promise<void>;
  /** Every channel's in-flight records of unaligned checkpoint `id` have come: they complete its state; `bytes` is the size of the buffers they came in. */
  channelState(id: number, channels: ChannelState[], bytes: number): void;
  /** Checkpoint `id` cannot complete here (a newer one came, it was canceled, an input failed): decline it. */
  decline(id: number, reason: string): void;
}

/** How far a channel is in the checkpoint under way. */
const enum Progress {
  /** Its barrier has not come. */
  WAITING,
  /** Its barrier came: aligned, it is held back; unaligned, its records are stored while `overtaken` buffers are left. */
  ARRIVED,
  /** It needs nothing more for this checkpoint. */
  DONE,
}

/**
 * The checkpoint barriers of a task's inputs (Flink's CheckpointBarrierHandler, aligned
 * and unaligned in one):
 *
 * - aligned: a channel whose barrier came is held back (its buffers, and its credit, wait)
 *   until every channel's has; then the snapshot is taken and the barrier sent on, and
 *   the channels are read again;
 * - unaligned (FLIP-76): at the first barrier the snapshot is taken at once and the
 *   barrier sent on ahead of the output; the records of each channel that belong before
 *   its barrier and come after the snapshot (those its barrier overtook, and those of a
 *   channel whose barrier has not come) are stored with the checkpoint;
 * - with an alignment timeout, an aligned checkpoint that waits longer goes unaligned.
 *
 * A newer barrier subsumes an older checkpoint still under way; a cancel, or an input
 * that fails, declines it. A channel that ended needs no barrier.
 */
export class BarrierHandler {
  private current = -1;
  private barrier: Barrier | null = null;
  private unaligned = false;
  private progress: Progress[][];
  /** Unaligned: buffers still to store, per channel that has its barrier. */
  private left: number[][];
  private records: unknown[][][];
  /** Bytes of the buffers whose records the unaligned checkpoint under way stores. */
  private recordedBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  /** When the first barrier of the checkpoint under way came (performance.now()), and its start delay. */
  private alignmentStarted = 0;
  private startDelayMs = 0;
  /** Set by an alignment timeout, for the task's loop to act on between buffers. */
  private timedOut = false;

  constructor(
    private readonly gates: readonly InputGate[],
    private readonly actions: CheckpointActions,
    /** Ms an aligned checkpoint may wait for its barriers before it goes unaligned; none when absent. */
    private readonly alignmentTimeoutMs: number | undefined,
    /** Wakes the task's loop (a timeout while it waits for input). */
    private readonly wake: () => void,
  ) {
    this.progress = gates.map((gate) => new Array<Progress>(gate.numberOfChannels).fill(Progress.DONE));
    this.left = gates.map((gate) => new Array<number>(gate.numberOfChannels).fill(0));
    this.records = gates.map((gate) => Array.from({ length: gate.numberOfChannels }, () => []));
  }

  /** Whether the records of a buffer of channel (g, c) are stored with an unaligned checkpoint. */
  recording(g: number, c: number): boolean {
    return this.unaligned && this.barrier !== null && (this.progress[g][c] === Progress.WAITING || (this.progress[g][c] === Progress.ARRIVED && this.left[g][c] > 0));
  }

  /** A buffer of channel (g, c) of `bytes`, recording, was read: its records are `records`. */
  recorded(g: number, c: number, records: readonly unknown[], bytes: number): void {
    for (const record of records) this.records[g][c].push(record);
    this.recordedBytes += bytes;
    if (this.progress[g][c] === Progress.ARRIVED && --this.left[g][c] === 0) this.channelDone(g, c);
  }

  /** Between buffers: an alignment that timed out goes unaligned here. */
  poll(): void | Promise<void> {
    if (!this.timedOut) return;
    this.timedOut = false;
    if (this.barrier !== null && !this.unaligned) return this.goUnaligned({ ...this.barrier, unaligned: true });
  }

  onBarrier(g: number, c: number, barrier: Barrier): void | Promise<void> {
    if (barrier.id < this.current) return;
    if (barrier.id > this.current) {
      if (this.barrier !== null) this.abort(`checkpoint ${this.current} was subsumed by checkpoint ${barrier.id}`);
      return this.begin(g, c, barrier);
    }
    if (this.barrier === null) return;
    return this.arrived(g, c, barrier);
  }

  /** A cancel of checkpoint `id` came (its coordinator aborted it). */
  onCancel(id: number): void {
    if (id === this.current && this.barrier !== null) this.abort(`checkpoint ${id} was canceled`);
  }

  /** Channel (g, c) ended: it needs no barrier. */
  onEnd(g: number, c: number): void | Promise<void> {
    if (this.barrier === null || this.progress[g][c] === Progress.DONE) return;
    if (!this.unaligned) {
      this.progress[g][c] = Progress.DONE;
      return this.checkAligned();
    }
    this.channelDone(g, c);
  }

  /** The task stops reading (it failed or was canceled): nothing under way can complete. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private begin(g: number, c: number, barrier: Barrier): void | Promise<void> {
    this.current = barrier.id;
    this.barrier = barrier;
    this.unaligned = false;
    this.timedOut = false;
    this.recordedBytes = 0;
    // The barrier's timestamp is the JobManager's clock: on another host, skew shows here (as in Flink).
    this.startDelayMs = Math.max(0, Date.now() - barrier.timestamp);
    this.alignmentStarted = performance.now();
    this.gates.forEach((gate, i) => {
      for (let ch = 0; ch < gate.numberOfChannels; ch++) {
        this.progress[i][ch] = gate.hasEnded(ch) ? Progress.DONE : Progress.WAITING;
        this.left[i][ch] = 0;
        this.records[i][ch] = [];
      }
    });
    if (barrier.unaligned) return this.goUnaligned(barrier, g, c);
    if (this.alignmentTimeoutMs !== undefined) {
      this.timer = setTimeout(() => {
        this.timedOut = true;
        this.wake();
      }, this.alignmentTimeoutMs);
    }
    return this.arrived(g, c, barrier);
  }

  private arrived(g: number, c: number, barrier: Barrier): void | Promise<void> {
    if (this.progress[g][c] !== Progress.WAITING) return;
    if (!this.unaligned) {
      this.progress[g][c] = Progress.ARRIVED;
      this.gates[g].block(c);
      return this.checkAligned();
    }
    this.progress[g][c] = Progress.ARRIVED;
    this.left[g][c] = barrier.overtaken;
    if (barrier.overtaken === 0) this.channelDone(g, c);
  }

  private checkAligned(): void | Promise<void> {
    if (this.progress.some((row) => row.some((p) => p === Progress.WAITING))) return;
    const barrier = this.barrier!;
    const timing = this.timing();
    this.finish();
    const taken = this.actions.snapshot(barrier, timing);
    for (const gate of this.gates) gate.unblockAll();
    return taken;
  }

  /**
   * Unaligned from here (at the first barrier, or when alignment took too long): the
   * snapshot now, the held channels read again (what follows their barrier is after the
   * snapshot), and the channels still waiting stored until their barrier.
   */
  private goUnaligned(barrier: Barrier, g?: number, c?: number): void | Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.unaligned = true;
    this.barrier = barrier;
    for (const row of this.progress) row.forEach((p, ch) => p === Progress.ARRIVED && (row[ch] = Progress.DONE));
    for (const gate of this.gates) gate.unblockAll();
    const taken = this.actions.snapshot(barrier, this.timing());
    const then = (): void => {
      if (g !== undefined && c !== undefined) void this.arrived(g, c, barrier);
      this.checkUnalignedDone();
    };
    if (taken) return taken.then(then);
    then();
  }

  private channelDone(g: number, c: number): void {
    this.progress[g][c] = Progress.DONE;
    this.checkUnalignedDone();
  }

  private checkUnalignedDone(): void {
    if (!this.unaligned || this.barrier === null) return;
    if (this.progress.some((row) => row.some((p) => p !== Progress.DONE))) return;
    const id = this.barrier.id;
    const channels: ChannelState[] = [];
    this.records.forEach((row, input) => row.forEach((records, channel) => records.length > 0 && channels.push({ input, channel, records })));
    this.finish();
    this.actions.channelState(id, channels, this.recordedBytes);
  }

  private timing(): BarrierTiming {
    return { startDelayMs: this.startDelayMs, alignmentMs: performance.now() - this.alignmentStarted };
  }

  private abort(reason: string): void {
    const id = this.current;
    this.finish();
    for (const gate of this.gates) gate.unblockAll();
    this.actions.decline(id, reason);
  }

  private finish(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.barrier = null;
    this.unaligned = false;
  }
}

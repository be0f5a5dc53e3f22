import type { InputGate } from '../../network/taskThread/consumer/InputGate.js';
import type { ReaderState } from '../../network/taskThread/serialization/RecordDeserializer.js';
import type { Barrier } from '../../network/Events.js';
import { inFlightSize, type InputInFlight } from './InFlightData.js';

/** The records of one input channel an unaligned checkpoint stores: those the task read after its snapshot and before the channel's barrier. */
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
  /**
   * Every channel's barrier of unaligned checkpoint `id` has come: the records read
   * before some came, and what they overtook, complete its state; `bytes` is the size
   * of the buffers both came in.
   */
  channelState(id: number, channels: ChannelState[], inputs: InputInFlight[], bytes: number): void;
  /** Checkpoint `id` cannot complete here (a newer one came, it was canceled, an input failed): decline it. */
  decline(id: number, reason: string): void;
}

/** How far a channel is in the checkpoint under way. */
const enum Progress {
  /** Its barrier has not come. */
  WAITING,
  /** Its barrier came, aligned: it is held back until every channel's has. */
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
 *   barrier sent on ahead of the output; what belongs before each channel's barrier and
 *   is read after the snapshot is stored with the checkpoint: copies of the buffers a
 *   barrier overtook in the channel's queue (taken when it comes, not when they are read),
 *   and the records a channel whose barrier has not come yet gives meanwhile;
 * - with an alignment timeout, an aligned checkpoint that waits longer goes unaligned,
 *   and so does one whose barrier comes unaligned on some channel (its upstream's timed out).
 *
 * A newer barrier subsumes an older checkpoint still under way; a cancel, or an input
 * that fails, declines it. A channel that ended needs no barrier.
 */
export class BarrierHandler {
  private current = -1;
  private barrier: Barrier | null = null;
  private unaligned = false;
  private progress: Progress[][];
  private records: unknown[][][];
  /** What unaligned barriers overtook at the channels they came on. */
  private inputs: InputInFlight[] = [];
  /** Bytes of the buffers whose records (or copies) the unaligned checkpoint under way stores. */
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
    this.records = gates.map((gate) => Array.from({ length: gate.numberOfChannels }, () => []));
  }

  /** Whether the records of a buffer of channel (g, c) are stored with an unaligned checkpoint. */
  recording(g: number, c: number): boolean {
    return this.unaligned && this.barrier !== null && this.progress[g][c] === Progress.WAITING;
  }

  /** A buffer of channel (g, c) of `bytes`, recording, was read: its records are `records`. */
  recorded(g: number, c: number, records: readonly unknown[], bytes: number): void {
    for (const record of records) this.records[g][c].push(record);
    this.recordedBytes += bytes;
  }

  /** Between buffers: an alignment that timed out goes unaligned here. */
  poll(): void | Promise<void> {
    if (!this.timedOut) return;
    this.timedOut = false;
    if (this.barrier !== null && !this.unaligned) return this.goUnaligned({ ...this.barrier, unaligned: true });
  }

  /**
   * The barrier of channel (g, c) came; an unaligned one was put ahead of `overtaken`
   * (copies of the data buffers queued behind it), and `reader` gives the channel's reader now.
   */
  onBarrier(g: number, c: number, barrier: Barrier, overtaken: Uint8Array[], reader: () => ReaderState): void | Promise<void> {
    const arrival: Arrival = { g, c, barrier, overtaken, reader };
    if (barrier.id < this.current) return;
    if (barrier.id > this.current) {
      if (this.barrier !== null) this.abort(`checkpoint ${this.current} was subsumed by checkpoint ${barrier.id}`);
      return this.begin(arrival);
    }
    if (this.barrier === null) return;
    return this.arrived(arrival);
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

  private begin(arrival: Arrival): void | Promise<void> {
    const { barrier } = arrival;
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
        this.records[i][ch] = [];
      }
    });
    this.inputs = [];
    if (barrier.unaligned) return this.goUnaligned(barrier, arrival);
    if (this.alignmentTimeoutMs !== undefined) {
      this.timer = setTimeout(() => {
        this.timedOut = true;
        this.wake();
      }, this.alignmentTimeoutMs);
    }
    return this.arrived(arrival);
  }

  private arrived(arrival: Arrival): void | Promise<void> {
    const { g, c, barrier } = arrival;
    if (this.progress[g][c] !== Progress.WAITING) return;
    if (!this.unaligned) {
      // What an unaligned barrier overtook belongs before it: holding the channel back would read it after the snapshot, unstored.
      if (barrier.unaligned) return this.goUnaligned({ ...this.barrier!, unaligned: true }, arrival);
      this.progress[g][c] = Progress.ARRIVED;
      this.gates[g].block(c);
      return this.checkAligned();
    }
    // Behind an unaligned barrier its producer stored what it overtook there: the reader's structures are needed to read that again.
    if (barrier.unaligned) {
      this.inputs.push({ input: g, channel: c, reader: arrival.reader(), buffers: arrival.overtaken });
      this.recordedBytes += inFlightSize([{ buffers: arrival.overtaken }]);
    }
    this.channelDone(g, c);
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
  private goUnaligned(barrier: Barrier, arrival?: Arrival): void | Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.unaligned = true;
    this.barrier = barrier;
    for (const row of this.progress) row.forEach((p, ch) => p === Progress.ARRIVED && (row[ch] = Progress.DONE));
    for (const gate of this.gates) gate.unblockAll();
    const taken = this.actions.snapshot(barrier, this.timing());
    const then = (): void => {
      if (arrival !== undefined) void this.arrived(arrival);
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
    const inputs = this.inputs;
    this.finish();
    this.actions.channelState(id, channels, inputs, this.recordedBytes);
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
    this.inputs = [];
  }
}

/** A barrier as it came on a channel. */
interface Arrival {
  g: number;
  c: number;
  barrier: Barrier;
  overtaken: Uint8Array[];
  reader: () => ReaderState;
}

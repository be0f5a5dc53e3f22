import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import { BufferQueue } from '../../buffer/BufferQueue.js';
import { isEndOfPartition } from '../../Events.js';
import type { ChannelAvailability, InputChannel } from '../../InputChannel.js';
import { SpillwayError } from '../../../errors/Errors.js';

/**
 * A consumer task's view of one input edge: one channel per producer subpartition.
 * Channels with data wait in a FIFO queue and give one buffer per turn, so no
 * channel starves. End-of-partition events are counted here; the gate is finished
 * once every channel delivered one.
 */
export class InputGate implements ChannelAvailability {
  private channels: InputChannel[] = [];
  private readonly ready = new BufferQueue<InputChannel>();
  private queued: boolean[] = [];
  private finishedChannels: boolean[] = [];
  /** Channels with an unaligned barrier at their head: served before any other. */
  private readonly urgent: InputChannel[] = [];
  /** Channels held back while a checkpoint is aligned (their barrier came); and those of them that have data meanwhile. */
  private blocked: boolean[] = [];
  private heldBack: boolean[] = [];
  private remaining = 0;
  private wakeUp: (() => void) | null = null;
  private requested = false;
  /** Time spent waiting for data, ms: the reader's idle time (Flink's idleTime). */
  idleMs = 0;
  /** Flag set by close(): no data will come, whatever the channels had. */
  private closed = false;
  /** The channel of the buffer the last pollNext() returned. */
  lastChannel = -1;

  /** Sets the channels, indexed by their channelIndex. */
  setChannels(channels: InputChannel[]): void {
    if (this.requested) throw new SpillwayError('SPW_ERR_INTERNAL', 'channels are fixed once requested');
    channels.forEach((c, i) => {
      if (c.channelIndex !== i) throw new SpillwayError('SPW_ERR_INTERNAL', `channel at ${i} has index ${c.channelIndex}`);
    });
    this.channels = channels;
    this.queued = channels.map(() => false);
    this.finishedChannels = channels.map(() => false);
    this.blocked = channels.map(() => false);
    this.heldBack = channels.map(() => false);
    this.remaining = channels.length;
  }

  get numberOfChannels(): number {
    return this.channels.length;
  }

  /** True once close() was called: a reader waiting on the gate must stop, not wait again. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Whether channel `channel` has given its end of partition. */
  hasEnded(channel: number): boolean {
    return this.finishedChannels[channel];
  }

  /** Whether a channel has announced a buffer that pollNextAny() can take now. */
  get hasData(): boolean {
    return this.ready.length > 0 || this.urgent.length > 0;
  }

  get isFinished(): boolean {
    return this.remaining === 0;
  }

  /** Starts every channel. */
  requestPartitions(): void {
    if (this.requested) return;
    this.requested = true;
    for (const channel of this.channels) channel.requestSubpartition();
  }

  notifyChannelNonEmpty(channel: InputChannel): void {
    const index = channel.channelIndex;
    if (this.queued[index] || this.finishedChannels[index]) return;
    if (this.blocked[index]) {
      this.heldBack[index] = true;
      return;
    }
    this.queued[index] = true;
    this.ready.push(channel);
    this.wake();
  }

  notifyPriority(channel: InputChannel): void {
    if (this.finishedChannels[channel.channelIndex]) return;
    this.urgent.push(channel);
    this.wake();
  }

  /** Holds a channel back: its buffers wait in it (and its credit with them) until unblockAll(). Aligning a checkpoint. */
  block(channel: number): void {
    this.blocked[channel] = true;
  }

  /** Copies of what the last unaligned barrier of channel `channel` overtook in its queue (InputChannel.takeOvertaken). */
  takeOvertaken(channel: number): Buffer[] {
    return this.channels[channel].takeOvertaken?.() ?? [];
  }

  /** Lets every held channel be read again, in turn. */
  unblockAll(): void {
    this.blocked.forEach((blocked, index) => {
      if (!blocked) return;
      this.blocked[index] = false;
      if (this.heldBack[index]) {
        this.heldBack[index] = false;
        this.notifyChannelNonEmpty(this.channels[index]);
      }
    });
  }

  private wake(): void {
    const wake = this.wakeUp;
    if (wake) {
      this.wakeUp = null;
      wake();
    }
  }

  /** The next data buffer from any channel, or null if none is ready now; events are dropped. Throws a channel's error. */
  pollNext(): NetworkBuffer | null {
    for (;;) {
      const buffer = this.pollNextAny();
      if (buffer === null || !buffer.isEvent) return buffer;
      buffer.recycle();
    }
  }

  /**
   * The next buffer from any channel, data or event (Events.ts), or null if none is
   * ready now; `lastChannel` says whose. An end of partition is counted here (the gate
   * is finished once every channel gave one) and returned too. Throws a channel's error.
   */
  pollNextAny(): NetworkBuffer | null {
    // An unaligned barrier is taken first, blocked or not: it is what the checkpoint waits for.
    for (let channel = this.urgent.shift(); channel !== undefined; channel = this.urgent.shift()) {
      if (this.finishedChannels[channel.channelIndex]) continue;
      const buffer = channel.pollNext();
      if (buffer === null) continue;
      // What came behind the barrier announced nothing (the channel was not empty then): it is in line now.
      this.notifyChannelNonEmpty(channel);
      this.lastChannel = channel.channelIndex;
      return buffer;
    }
    for (;;) {
      const channel = this.ready.shift();
      if (channel === undefined) return null;
      const index = channel.channelIndex;
      this.queued[index] = false;
      if (this.finishedChannels[index]) continue;
      if (this.blocked[index]) {
        this.heldBack[index] = true;
        continue;
      }
      const buffer = channel.pollNext();
      if (buffer === null) continue;
      if (isEndOfPartition(buffer)) this.onEndOfPartition(channel);
      // More may be there: back to the end of the line, behind the others.
      else this.notifyChannelNonEmpty(channel);
      this.lastChannel = index;
      return buffer;
    }
  }

  /** Resolves when a channel announces data (or the gate finished, or was closed: nothing would wake a wait begun after that). */
  waitForData(): Promise<void> {
    if (this.hasData || this.isFinished || this.closed) return Promise.resolve();
    const start = performance.now();
    return new Promise((resolve) => {
      this.wakeUp = () => {
        this.idleMs += performance.now() - start;
        resolve();
      };
    });
  }

  /** Stops every channel and frees their buffers. */
  close(): void {
    this.closed = true;
    for (const channel of this.channels) channel.release();
    this.ready.drain();
    const wake = this.wakeUp;
    this.wakeUp = null;
    wake?.();
  }

  private onEndOfPartition(channel: InputChannel): void {
    this.finishedChannels[channel.channelIndex] = true;
    channel.release();
    if (--this.remaining === 0) {
      const wake = this.wakeUp;
      this.wakeUp = null;
      wake?.();
    }
  }
}

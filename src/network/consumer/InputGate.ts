import type { NetworkBuffer } from '../buffer/NetworkBuffer.js';
import { BufferQueue } from '../buffer/BufferQueue.js';
import { EventType, eventTypeOf } from '../serialization/Events.js';
import type { ChannelAvailability, InputChannel } from './InputChannel.js';

/**
 * A consumer task's view of one input edge: one channel per producer subpartition.
 * Channels with data wait in a FIFO queue and give one buffer per turn, so no
 * channel starves. End-of-partition events are consumed here; the gate is finished
 * once every channel delivered one.
 */
export class InputGate implements ChannelAvailability {
  private channels: InputChannel[] = [];
  private readonly ready = new BufferQueue<InputChannel>();
  private queued: boolean[] = [];
  private finishedChannels: boolean[] = [];
  private remaining = 0;
  private wakeUp: (() => void) | null = null;
  private requested = false;
  /** Flag set by close(): no data will come, whatever the channels had. */
  private closed = false;
  /** The channel of the buffer the last pollNext() returned. */
  lastChannel = -1;

  /** Sets the channels, indexed by their channelIndex. */
  setChannels(channels: InputChannel[]): void {
    if (this.requested) throw new Error('channels are fixed once requested');
    channels.forEach((c, i) => {
      if (c.channelIndex !== i) throw new Error(`channel at ${i} has index ${c.channelIndex}`);
    });
    this.channels = channels;
    this.queued = channels.map(() => false);
    this.finishedChannels = channels.map(() => false);
    this.remaining = channels.length;
  }

  get numberOfChannels(): number {
    return this.channels.length;
  }

  /** True once close() was called: a reader waiting on the gate must stop, not wait again. */
  get isClosed(): boolean {
    return this.closed;
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
    this.queued[index] = true;
    this.ready.push(channel);
    const wake = this.wakeUp;
    if (wake) {
      this.wakeUp = null;
      wake();
    }
  }

  /** The next data buffer from any channel, or null if none is ready now. Throws a channel's error. */
  pollNext(): NetworkBuffer | null {
    for (;;) {
      const channel = this.ready.shift();
      if (channel === undefined) return null;
      const index = channel.channelIndex;
      this.queued[index] = false;
      if (this.finishedChannels[index]) continue;
      const buffer = channel.pollNext();
      if (buffer === null) continue;
      if (buffer.isEvent) this.onEvent(channel, buffer);
      // More may be there: back to the end of the line, behind the others.
      this.notifyChannelNonEmpty(channel);
      if (buffer.isEvent) continue;
      this.lastChannel = index;
      return buffer;
    }
  }

  /** Resolves when a channel announces data (or the gate finished). */
  waitForData(): Promise<void> {
    if (this.ready.length > 0 || this.isFinished) return Promise.resolve();
    return new Promise((resolve) => {
      this.wakeUp = resolve;
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

  private onEvent(channel: InputChannel, buffer: NetworkBuffer): void {
    const type = eventTypeOf(buffer);
    buffer.recycle();
    if (type === EventType.END_OF_PARTITION) {
      const index = channel.channelIndex;
      this.finishedChannels[index] = true;
      channel.release();
      if (--this.remaining === 0) {
        const wake = this.wakeUp;
        this.wakeUp = null;
        wake?.();
      }
    }
  }
}

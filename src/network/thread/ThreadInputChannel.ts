import type { NetworkBuffer } from '../buffer/NetworkBuffer.js';
import { BufferQueue } from '../buffer/BufferQueue.js';
import type { ChannelAvailability, InputChannel, SubpartitionAddress } from '../consumer/InputChannel.js';

/**
 * An input channel in a task thread: the network thread reads the subpartition
 * (locally or over TCP) and lends each buffer here by index, in order.
 */
export class ThreadInputChannel implements InputChannel {
  private readonly queue = new BufferQueue<NetworkBuffer>();
  private error: Error | null = null;
  private released = false;

  constructor(
    readonly channelIndex: number,
    readonly address: SubpartitionAddress,
    private readonly gate: ChannelAvailability,
    private readonly onRequest: () => void,
    private readonly onRelease: () => void,
  ) {}

  requestSubpartition(): void {
    this.onRequest();
  }

  pollNext(): NetworkBuffer | null {
    if (this.error !== null) throw this.error;
    return this.queue.shift() ?? null;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    for (const buffer of this.queue.drain()) buffer.recycle();
    this.onRelease();
  }

  /** A buffer (data or event) from the network thread. */
  deliver(buffer: NetworkBuffer): void {
    if (this.released) {
      buffer.recycle();
      return;
    }
    this.queue.push(buffer);
    if (this.queue.length === 1) this.gate.notifyChannelNonEmpty(this);
  }

  fail(message: string): void {
    if (this.released || this.error !== null) return;
    this.error = new Error(message);
    this.gate.notifyChannelNonEmpty(this);
  }
}

import type { NetworkBuffer } from '../buffer/NetworkBuffer.js';
import { BufferQueue } from '../buffer/BufferQueue.js';
import type { ChannelAvailability, SubpartitionAddress } from '../InputChannel.js';
import { InputChannelBase } from '../InputChannelBase.js';
import { inFlightCopy } from '../buffer/InFlightCopy.js';
import { isPriorityEvent } from '../Events.js';
import { deserializeError, type SerializedError } from '../../errors/Errors.js';

/**
 * An input channel in a task thread: the network thread reads the subpartition
 * (locally or over TCP) and lends each buffer here by index, in order.
 */
export class ThreadInputChannel extends InputChannelBase {
  private readonly queue = new BufferQueue<NetworkBuffer>();
  private overtaken: Buffer[] = [];

  constructor(
    channelIndex: number,
    address: SubpartitionAddress,
    private readonly gate: ChannelAvailability,
    private readonly onRequest: () => void,
    private readonly onRelease: () => void,
  ) {
    super(channelIndex, address);
  }

  requestSubpartition(): void {
    this.onRequest();
  }

  protected nextBuffer(): NetworkBuffer | null {
    return this.queue.shift() ?? null;
  }

  protected freeHeld(): void {
    for (const buffer of this.queue.drain()) buffer.recycle();
    this.onRelease();
  }

  takeOvertaken(): Buffer[] {
    const overtaken = this.overtaken;
    this.overtaken = [];
    return overtaken;
  }

  /**
   * A buffer (data or event) from the network thread. An unaligned checkpoint barrier
   * goes ahead of the buffers queued here too, keeping copies of the data buffers it overtook.
   */
  deliver(buffer: NetworkBuffer): void {
    if (this.released) {
      buffer.recycle();
      return;
    }
    if (isPriorityEvent(buffer)) {
      this.overtaken = [];
      for (const queued of this.queue.values()) if (!queued.isEvent) this.overtaken.push(inFlightCopy(queued));
      this.queue.unshift(buffer);
      if (this.gate.notifyPriority) this.gate.notifyPriority(this);
      else this.gate.notifyChannelNonEmpty(this);
      return;
    }
    this.queue.push(buffer);
    if (this.queue.length === 1) this.gate.notifyChannelNonEmpty(this);
  }

  fail(error: SerializedError): void {
    if (this.released || this.error !== null) return;
    this.error = deserializeError(error);
    this.gate.notifyChannelNonEmpty(this);
  }
}

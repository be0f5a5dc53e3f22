import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import { BufferQueue } from '../../buffer/BufferQueue.js';
import { inFlightCopy } from '../../buffer/InFlightCopy.js';
import { EventType, eventBuffer } from '../../Events.js';
import {
  PartitionReleasedError,
  type AvailabilityListener,
  type ResultSubpartition,
  type ResultSubpartitionView,
} from './ResultSubpartition.js';
import { SpillwayError } from '../../../errors/Errors.js';

/**
 * Streaming exchange: a queue that the consumer drains while the producer fills
 * it. It is bounded by the partition's BufferPool: buffers return to the pool
 * only when the consumer recycles them, so a consumer that stops reading stops
 * the producer. Read once.
 */
export class PipelinedSubpartition implements ResultSubpartition {
  private readonly queue = new BufferQueue<NetworkBuffer>();
  private dataBuffers = 0;
  private finished = false;
  private released: PartitionReleasedError | null = null;
  private view: PipelinedView | null = null;

  constructor(
    readonly index: number,
    private readonly name: string,
    private readonly onConsumed: () => void = () => {},
  ) {}

  add(buffer: NetworkBuffer): void {
    if (this.released !== null) {
      // The consumer is gone: the producer learns it (Flink fails the producer too) instead of writing into nothing.
      buffer.recycle();
      throw this.released;
    }
    if (this.finished) {
      buffer.recycle();
      throw new SpillwayError('SPW_ERR_INTERNAL', `${this.name} is finished`);
    }
    this.queue.push(buffer);
    if (!buffer.isEvent) this.dataBuffers++;
    if (this.queue.length === 1) this.view?.notify();
  }

  /**
   * Puts an unaligned checkpoint barrier ahead of the buffers queued (FLIP-76); returns
   * copies of the data buffers it went ahead of, which the producer stores with the
   * checkpoint as its output channel state. The buffers themselves go on behind it.
   */
  addPriority(buffer: NetworkBuffer): Buffer[] {
    if (this.released !== null || this.finished) {
      buffer.recycle();
      return [];
    }
    const overtaken: Buffer[] = [];
    for (const queued of this.queue.values()) if (!queued.isEvent) overtaken.push(inFlightCopy(queued));
    this.queue.unshift(buffer);
    this.view?.notify();
    return overtaken;
  }

  finish(): void {
    if (this.finished) return;
    this.add(eventBuffer(EventType.END_OF_PARTITION));
    this.finished = true;
  }

  createReadView(listener: AvailabilityListener): ResultSubpartitionView {
    if (this.view !== null) throw new SpillwayError('SPW_ERR_INTERNAL', `${this.name} is already being read`);
    if (this.released !== null) throw this.released;
    this.view = new PipelinedView(this, listener);
    if (this.queue.length > 0) queueMicrotask(listener);
    return this.view;
  }

  release(cause?: Error): void {
    if (this.released !== null) return;
    const consumed = this.isDrained;
    this.released = new PartitionReleasedError(this.name, cause);
    for (const buffer of this.queue.drain()) buffer.recycle();
    this.dataBuffers = 0;
    // A reader still reading must learn of it; one that read to the end has nothing to learn.
    if (!consumed) this.view?.notify();
  }

  /** For the view. */
  poll(): NetworkBuffer | null {
    if (this.released !== null) throw this.released;
    const buffer = this.queue.shift() ?? null;
    if (buffer === null) return null;
    if (buffer.isEvent) {
      if (this.finished && this.queue.length === 0) this.onConsumed();
    } else {
      this.dataBuffers--;
    }
    return buffer;
  }

  get backlog(): number {
    return this.dataBuffers;
  }

  get buffersInMemory(): number {
    return this.queue.length;
  }

  get buffersOnDisk(): number {
    return 0;
  }

  get isDrained(): boolean {
    return this.finished && this.queue.length === 0;
  }

  releaseView(): void {
    this.release(new SpillwayError('SPW_ERR_PARTITION_RELEASED', 'the consumer released it'));
  }
}

class PipelinedView implements ResultSubpartitionView {
  constructor(
    private readonly subpartition: PipelinedSubpartition,
    private readonly listener: AvailabilityListener,
  ) {}

  pollNext(): NetworkBuffer | null {
    return this.subpartition.poll();
  }

  get backlog(): number {
    return this.subpartition.backlog;
  }

  get isConsumed(): boolean {
    return this.subpartition.isDrained;
  }

  release(): void {
    if (!this.subpartition.isDrained) this.subpartition.releaseView();
  }

  notify(): void {
    this.listener();
  }
}

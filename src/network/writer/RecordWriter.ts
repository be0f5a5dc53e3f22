import type { NetworkBuffer } from '../buffer/NetworkBuffer.js';
import type { ResultPartition } from '../partition/ResultPartition.js';
import { RecordSerializer } from '../serialization/RecordSerializer.js';
import type { ChannelSelector } from './ChannelSelector.js';

/** Flush partly filled buffers this often, in ms; 0 after every record; -1 only when full. */
export const DEFAULT_BUFFER_TIMEOUT = 100;

/**
 * One per output edge of a task: routes each record through the selector into the
 * serializer of its channel, fills that channel's buffer and hands it to the
 * partition when full, on flush() and by the buffer timeout. emit() returns a
 * promise only when it had to wait for a buffer (backpressure); callers await it
 * before emitting again.
 */
export class RecordWriter<T> {
  private readonly serializers: RecordSerializer[];
  private readonly current: (NetworkBuffer | null)[];
  private readonly timer: NodeJS.Timeout | null;
  private readonly flushAlways: boolean;
  private closed = false;
  recordsOut = 0;
  bytesOut = 0;

  constructor(
    private readonly partition: ResultPartition,
    private readonly selector: ChannelSelector<T>,
    bufferTimeout = DEFAULT_BUFFER_TIMEOUT,
  ) {
    const n = partition.numSubpartitions;
    selector.setup(n);
    // A broadcast sends each channel the same sequence, so one serializer (and one structure history) serves all.
    const count = selector.isBroadcast ? 1 : n;
    this.serializers = Array.from({ length: count }, () => new RecordSerializer());
    this.current = new Array<NetworkBuffer | null>(n).fill(null);
    this.flushAlways = bufferTimeout === 0;
    this.timer = bufferTimeout > 0 ? setInterval(() => this.flushAll(), bufferTimeout) : null;
    this.timer?.unref();
  }

  emit(record: T): void | Promise<void> {
    this.recordsOut++;
    if (this.selector.isBroadcast) return this.broadcast(record, 0);
    const channel = this.selector.selectChannel(record);
    const serializer = this.serializers[channel];
    serializer.serialize(record);
    return this.copy(channel, serializer);
  }

  /** Hands every partly filled buffer to its subpartition. */
  flushAll(): void {
    for (let channel = 0; channel < this.current.length; channel++) this.flush(channel);
  }

  /** Flushes, then ends the partition: end-of-partition on every channel. Resolves when the data is readable. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.flushAll();
    await this.partition.finish();
  }

  /** Stops the timer and drops partly filled buffers, for a task that failed. */
  abort(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (let channel = 0; channel < this.current.length; channel++) {
      this.current[channel]?.recycle();
      this.current[channel] = null;
    }
  }

  private broadcast(record: T, from: number): void | Promise<void> {
    const serializer = this.serializers[0];
    if (from === 0) serializer.serialize(record);
    for (let channel = from; channel < this.current.length; channel++) {
      serializer.rewind();
      const waiting = this.copy(channel, serializer);
      if (waiting) return waiting.then(() => this.broadcast(record, channel + 1));
    }
  }

  /** Copies the staged record into the channel's buffers; a promise only if a buffer had to be awaited. */
  private copy(channel: number, serializer: RecordSerializer): void | Promise<void> {
    for (;;) {
      let buffer = this.current[channel];
      if (buffer === null) {
        buffer = this.partition.pool.requestBuffer();
        if (buffer === null) return this.copyAfterWait(channel, serializer);
        this.current[channel] = buffer;
      }
      if (serializer.copyTo(buffer)) {
        if (buffer.size === buffer.capacity || this.flushAlways) this.flush(channel);
        return;
      }
      this.flush(channel);
    }
  }

  private async copyAfterWait(channel: number, serializer: RecordSerializer): Promise<void> {
    // Other writers in this process pack while this one waits: keep the record safe from them.
    serializer.detach();
    this.relievePool();
    const buffer = await this.partition.pool.requestBufferAsync();
    if (this.closed) {
      buffer.recycle();
      throw new Error(`record writer of partition ${this.partition.id} was closed while waiting for a buffer`);
    }
    this.current[channel] = buffer;
    await this.copy(channel, serializer);
  }

  /**
   * The pool is empty. If every buffer it lent is a partly filled one of this writer,
   * none would ever come back (no buffer timeout, or a pool that cannot grow): hand
   * them over. A blocking partition may then have to spill to free memory.
   */
  private relievePool(): void {
    let held = 0;
    for (const buffer of this.current) if (buffer !== null) held++;
    if (held > 0 && this.partition.pool.buffersInUse <= held) this.flushAll();
    this.partition.onPoolExhausted();
  }

  private flush(channel: number): void {
    const buffer = this.current[channel];
    if (buffer === null || buffer.size === 0) return;
    this.current[channel] = null;
    this.bytesOut += buffer.size;
    this.partition.add(buffer, channel);
  }
}

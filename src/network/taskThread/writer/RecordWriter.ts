import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import type { ResultPartitionWriter } from '../../ResultPartitionWriter.js';
import { RecordSerializer } from '../serialization/RecordSerializer.js';
import type { ChannelSelector } from './ChannelSelector.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** Flush partly filled buffers this often, in ms; 0 after every record; -1 only when full. */
export const DEFAULT_BUFFER_TIMEOUT = 100;

/**
 * One per output edge of a task: routes each record through the selector into the
 * batch of its channel, packs a batch when it about fills the channel's buffer, and
 * hands the buffer to the partition when it is full, on flush() and by the buffer
 * timeout. emit() returns a promise only when it has to wait: for a buffer
 * (backpressure), or for another write that waits for one; callers await it before
 * emitting again. A record is packed when its batch is, not on emit(): it must not
 * be changed once emitted, and a record msgpackr cannot pack fails the writer then.
 */
export class RecordWriter<T> {
  private readonly serializers: RecordSerializer[];
  private readonly current: (NetworkBuffer | null)[];
  private readonly capacity: number;
  private readonly timer: NodeJS.Timeout | null;
  private readonly flushAlways: boolean;
  /** An emit or a timed flush that waits for a buffer: nothing else writes until it is done. */
  private busy: Promise<void> | null = null;
  private failure: unknown = null;
  private closed = false;
  private closing: Promise<void> | null = null;
  private aborted = false;
  recordsOut = 0;
  bytesOut = 0;
  /** Time spent waiting for a buffer of the pool, ms: this writer's backpressure (Flink's backPressuredTime). */
  backPressuredMs = 0;

  constructor(
    private readonly partition: ResultPartitionWriter,
    private readonly selector: ChannelSelector<T>,
    bufferTimeout = DEFAULT_BUFFER_TIMEOUT,
  ) {
    const n = partition.numSubpartitions;
    selector.setup(n);
    // A broadcast sends each channel the same buffers, so one serializer (and one structure history) and one buffer serve all.
    const count = selector.isBroadcast ? 1 : n;
    this.serializers = Array.from({ length: count }, () => new RecordSerializer());
    this.current = new Array<NetworkBuffer | null>(count).fill(null);
    this.capacity = partition.pool.segmentSize;
    this.flushAlways = bufferTimeout === 0;
    this.timer = bufferTimeout > 0 ? setInterval(() => this.flushOnTimer(), bufferTimeout) : null;
    this.timer?.unref();
  }

  /** How many channels (subpartitions) it writes. */
  get channels(): number {
    return this.partition.numSubpartitions;
  }

  emit(record: T): void | Promise<void> {
    if (this.busy !== null) return this.busy.then(() => this.emit(record));
    if (this.failure !== null) throw this.failure;
    this.recordsOut++;
    // Broadcast channels fill in step: channel 0 speaks for all.
    const channel = this.selector.isBroadcast ? 0 : this.selector.selectChannel(record);
    const serializer = this.serializers[channel];
    serializer.add(record);
    if (!serializer.isFull(this.free(channel)) && !this.flushAlways) return;
    return this.attempt(() => this.write(channel));
  }

  /**
   * Emits a record with its event timestamp, which travels just before it in its batch
   * (an edge of event time: its reader takes the two together).
   */
  emitTimestamped(record: T, timestamp: number): void | Promise<void> {
    if (this.busy !== null) return this.busy.then(() => this.emitTimestamped(record, timestamp));
    if (this.failure !== null) throw this.failure;
    this.recordsOut++;
    const channel = this.selector.isBroadcast ? 0 : this.selector.selectChannel(record);
    const serializer = this.serializers[channel];
    serializer.add(timestamp);
    serializer.add(record);
    if (!serializer.isFull(this.free(channel)) && !this.flushAlways) return;
    return this.attempt(() => this.write(channel));
  }

  /**
   * Sends an event (Events.ts: its bytes) on channel `channel`, or on every channel for
   * -1, behind every record emitted before it: what is batched or partly filled goes
   * first. Resolves once it is handed over.
   */
  emitEvent(event: Uint8Array, channel = -1): void | Promise<void> {
    if (this.closed) return;
    const waiting = this.flushAll();
    if (waiting) return waiting.then(() => this.partition.addEvent(event, channel));
    this.partition.addEvent(event, channel);
  }

  /**
   * Sends an unaligned checkpoint barrier: what is batched or partly filled is handed to
   * the subpartitions first (it belongs before the barrier), then the barrier goes ahead
   * of all they queued. Gives copies of what it overtook, by subpartition.
   */
  async emitPriorityEvent(event: Uint8Array): Promise<Uint8Array[][]> {
    if (this.closed) return [];
    await this.flushAll();
    return this.partition.addPriorityEvent(event);
  }

  /**
   * Restoring: the bytes an unaligned checkpoint stored for a subpartition go out as they
   * were, ahead of any record (a batch may span buffers, so smaller buffers split them).
   */
  async emitBytes(subpartition: number, stored: readonly Uint8Array[]): Promise<void> {
    for (const bytes of stored) {
      for (let at = 0; at < bytes.length; ) {
        const buffer = await this.partition.pool.requestBufferAsync();
        const size = Math.min(buffer.capacity, bytes.length - at);
        buffer.segment.set(bytes.subarray(at, at + size), 0);
        buffer.size = size;
        at += size;
        this.partition.add(buffer, subpartition);
      }
    }
  }

  /** Packs every channel's batch and hands every partly filled buffer to its subpartition. */
  flushAll(): void | Promise<void> {
    if (this.busy !== null) return this.busy.then(() => this.flushAll());
    if (this.failure !== null) throw this.failure;
    return this.attempt(() => this.flushFrom(0));
  }

  /** Flushes, then ends the partition: end-of-partition on every channel. Resolves when the data is readable. */
  close(): Promise<void> {
    // After an abort there is nothing to flush, and no end of partition to send.
    this.closing ??= this.aborted ? Promise.resolve() : this.closeOnce();
    return this.closing;
  }

  /** Stops the timer and drops batches and partly filled buffers, for a task that failed. */
  abort(): void {
    this.closed = true;
    this.aborted = true;
    if (this.timer) clearInterval(this.timer);
    for (const serializer of this.serializers) serializer.discard();
    for (let channel = 0; channel < this.current.length; channel++) {
      this.current[channel]?.recycle();
      this.current[channel] = null;
    }
  }

  private async closeOnce(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.flushAll();
    await this.partition.finish();
  }

  /** Bytes the channel's next batch can take before it spills into another buffer. */
  private free(channel: number): number {
    const buffer = this.current[channel];
    return buffer === null ? this.capacity : buffer.capacity - buffer.size;
  }

  private flushOnTimer(): void {
    if (this.busy !== null || this.closed || this.failure !== null) return;
    try {
      void this.attempt(() => this.flushFrom(0));
    } catch {
      // Kept as the writer's failure: the next emit() or close() throws it.
    }
  }

  /**
   * Runs a write. A failure (a record msgpackr cannot pack, an abort while waiting)
   * fails the writer for good: the batch is gone, and a channel's stream must not go
   * on without it.
   */
  private attempt(write: () => void | Promise<void>): void | Promise<void> {
    let waiting: void | Promise<void>;
    try {
      waiting = write();
    } catch (error) {
      this.failure ??= error;
      throw error;
    }
    return waiting && this.hold(waiting);
  }

  /** Makes every other write wait for this one; a failure fails the writer. */
  private hold(waiting: Promise<void>): Promise<void> {
    const held = waiting.then(
      () => void (this.busy = null),
      (error: unknown) => {
        this.busy = null;
        this.failure ??= error;
        throw error;
      },
    );
    // A timed flush has no caller to see its failure: the next emit() or close() throws it.
    held.catch(() => {});
    this.busy = held;
    return held;
  }

  private flushFrom(from: number): void | Promise<void> {
    for (let channel = from; channel < this.serializers.length; channel++) {
      const serializer = this.serializers[channel];
      if (serializer.hasPending) {
        const waiting = this.write(channel);
        if (waiting) return waiting.then(() => this.flushFrom(channel));
      }
      this.flush(channel);
    }
  }

  /**
   * Packs the channel's batch and copies it into the channel's buffers (channel 0's
   * speaks for every channel of a broadcast). With no buffer to start in, it waits for one before packing: a
   * batch not yet packed needs no copy of its own while it waits.
   */
  private write(channel: number): void | Promise<void> {
    if (this.current[channel] === null) {
      const buffer = this.partition.pool.requestBuffer();
      if (buffer === null) return this.writeAfterWait(channel);
      this.current[channel] = buffer;
    }
    const serializer = this.serializers[channel];
    serializer.stage();
    return this.copy(channel, serializer);
  }

  private async writeAfterWait(channel: number): Promise<void> {
    await this.awaitBuffer(channel);
    await this.write(channel);
  }

  /** Copies the staged batch into the channel's buffers; a promise only if a buffer had to be awaited. */
  private copy(channel: number, serializer: RecordSerializer): void | Promise<void> {
    for (;;) {
      let buffer = this.current[channel];
      if (buffer === null) {
        buffer = this.partition.pool.requestBuffer();
        if (buffer === null) return this.copyAfterWait(channel, serializer);
        this.current[channel] = buffer;
      }
      if (serializer.copyTo(buffer)) {
        // Too little left for a batch worth packing: send it now rather than split the next batch.
        if (this.flushAlways || buffer.capacity - buffer.size < (this.capacity >> 5) + serializer.recordBytes) this.flush(channel);
        return;
      }
      this.flush(channel);
    }
  }

  private async copyAfterWait(channel: number, serializer: RecordSerializer): Promise<void> {
    // Other writers in this process pack while this one waits: keep the batch safe from them.
    serializer.detach();
    await this.awaitBuffer(channel);
    await this.copy(channel, serializer);
  }

  /** Waits for a buffer and makes it the channel's current one, unless the writer was aborted meanwhile. */
  private async awaitBuffer(channel: number): Promise<void> {
    this.relievePool();
    const start = performance.now();
    const buffer = await this.partition.pool.requestBufferAsync();
    this.backPressuredMs += performance.now() - start;
    if (this.aborted) {
      buffer.recycle();
      throw new SpillwayError('SPW_ERR_TASK_CANCELED', `record writer of partition ${this.partition.id} was aborted while waiting for a buffer`);
    }
    this.current[channel] = buffer;
  }

  /**
   * The pool is empty. If every buffer it lent is a partly filled one of this writer,
   * none would ever come back (no buffer timeout, or a pool that cannot grow): hand
   * them over. A blocking partition may then have to spill to free memory.
   */
  private relievePool(): void {
    let held = 0;
    for (const buffer of this.current) if (buffer !== null) held++;
    if (held > 0 && this.partition.pool.buffersInUse <= held) {
      for (let channel = 0; channel < this.current.length; channel++) this.flush(channel);
    }
    this.partition.onPoolExhausted();
  }

  private flush(channel: number): void {
    const buffer = this.current[channel];
    if (buffer === null || buffer.size === 0) return;
    this.current[channel] = null;
    if (this.selector.isBroadcast) {
      this.bytesOut += buffer.size * this.partition.numSubpartitions;
      this.partition.broadcast(buffer);
    } else {
      this.bytesOut += buffer.size;
      this.partition.add(buffer, channel);
    }
  }
}

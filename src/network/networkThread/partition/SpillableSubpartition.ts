import fs from 'node:fs';
import { DataType, NetworkBuffer, unpooledBuffer } from '../../buffer/NetworkBuffer.js';
import type { BufferPool } from '../../buffer/BufferPool.js';
import { EventType, eventBuffer } from '../../Events.js';
import { encodeBuffers, readBuffersAt, writeFully } from './PartitionFile.js';
import {
  PartitionReleasedError,
  type AvailabilityListener,
  type ResultSubpartition,
  type ResultSubpartitionView,
} from './ResultSubpartition.js';
import { networkCounters } from '../NetworkCounters.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** How many buffers one writev() takes at most (each is two chunks: header and payload). */
const MAX_WRITE_BATCH = 128;
/**
 * The most buffers a spilled subpartition gathers before it writes them with one writev,
 * unless its partition's pool runs dry or it finishes: a write as buffers came took 5 of
 * them on average, and each write is a thread-pool round trip with its futex wake-ups.
 * Runs are shorter where the pool is small for its subpartitions (see runLength).
 */
const MAX_WRITE_RUN = 32;
/**
 * How many buffers a view reads ahead with one preadv: a read per 32 KiB buffer cost the
 * network thread a thread-pool round trip each, more than the copy. The next run is read
 * once half of this one is polled.
 */
const READ_AHEAD = 16;

/**
 * Blocking exchange: buffers are kept in memory until the partition's memory budget
 * is exceeded; then this subpartition is spilled (its buffers appended to its own
 * file, each behind a checked header (PartitionFile.ts), and every later buffer too). Readable once the producer finished and every
 * write is on disk; can be read any number of times until released.
 */
export class SpillableSubpartition implements ResultSubpartition {
  /** Buffers held in memory, in order, while not spilled. */
  private memory: NetworkBuffer[] = [];
  private memoryBytes = 0;
  /** Where each buffer of the file starts, its length and type. */
  private readonly offsets: number[] = [];
  private readonly lengths: number[] = [];
  private readonly types: DataType[] = [];
  private fd: number | null = null;
  private file = '';
  private fileSize = 0;
  /** Reads of the file in flight: the file is closed only once none is. */
  private reads = 0;
  private readonly writeQueue: NetworkBuffer[] = [];
  private writing = false;
  /** Everything queued is to be written, not only whole runs. */
  private flushing = false;
  private finished = false;
  private ready = false;
  private dataCount = 0;
  private failure: Error | null = null;
  private readonly views = new Set<SpillableView>();
  private readonly whenWritten: (() => void)[] = [];

  constructor(
    readonly index: number,
    private readonly name: string,
    /** The file to spill to; its folder is made when first asked. */
    private readonly spillPath: () => string,
    /** The pool the partition writes with; reading spilled buffers borrows from it too. */
    readonly pool: BufferPool,
    private readonly onMemoryChange: (deltaBytes: number) => void,
    /** Subpartitions of the partition, which share the pool. */
    private readonly subpartitions = 1,
  ) {}

  /**
   * Buffers gathered for one write: the runs of every subpartition together hold at most
   * half of the pool's current limit, so that the producer seldom waits for a flush (at
   * fan-out 32 a run of 32 would take the pool many times over).
   */
  private runLength(): number {
    return Math.max(1, Math.min(MAX_WRITE_RUN, Math.floor(this.pool.limit / (2 * this.subpartitions))));
  }

  get isSpilled(): boolean {
    return this.fd !== null;
  }

  get bytesInMemory(): number {
    return this.memoryBytes;
  }

  /** True while buffers are on their way to the spill file (they return to the pool once written). */
  get isWriting(): boolean {
    return this.writing;
  }

  get bytesOnDisk(): number {
    return this.fileSize;
  }

  /** Buffers (data and events) the subpartition holds, in memory or on disk. */
  get bufferCount(): number {
    return this.isSpilled ? this.offsets.length + this.writeQueue.length : this.memory.length;
  }

  get buffersInMemory(): number {
    return this.isSpilled ? this.writeQueue.length : this.memory.length;
  }

  get buffersOnDisk(): number {
    return this.offsets.length;
  }

  get dataBufferCount(): number {
    return this.dataCount;
  }

  add(buffer: NetworkBuffer): void {
    if (this.failure !== null) {
      buffer.recycle();
      throw this.failure;
    }
    if (this.finished) {
      buffer.recycle();
      throw new SpillwayError('SPW_ERR_INTERNAL', `${this.name} is finished`);
    }
    if (!buffer.isEvent) this.dataCount++;
    if (this.isSpilled) {
      this.enqueueWrite(buffer);
      return;
    }
    this.memory.push(buffer);
    this.memoryBytes += buffer.capacity;
    this.onMemoryChange(buffer.capacity);
  }

  /** Moves the in-memory buffers, and all later ones, to the spill file. */
  spill(): void {
    if (this.isSpilled || this.failure !== null) return;
    this.file = this.spillPath();
    this.fd = fs.openSync(this.file, 'w+');
    networkCounters.spillFiles++;
    const buffers = this.memory;
    const bytes = this.memoryBytes;
    this.memory = [];
    this.memoryBytes = 0;
    this.onMemoryChange(-bytes);
    for (const buffer of buffers) this.enqueueWrite(buffer);
  }

  /** Appends end-of-partition; resolves once everything is readable. */
  finish(): Promise<void> {
    if (!this.finished) {
      this.add(eventBuffer(EventType.END_OF_PARTITION));
      this.finished = true;
    }
    this.flushWrites();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (this.failure !== null) reject(this.failure);
        else if (this.ready) resolve();
        else this.whenWritten.push(check);
      };
      this.markReadyIfWritten();
      check();
    });
  }

  /** Writes the buffers gathered for a run now: the pool is dry (they come back only once written), or the input ended. */
  flushWrites(): void {
    this.flushing = true;
    if (!this.writing) this.writeBatch();
  }

  createReadView(listener: AvailabilityListener): ResultSubpartitionView {
    if (this.failure !== null) throw this.failure;
    const view = new SpillableView(this, listener);
    this.views.add(view);
    if (this.ready) queueMicrotask(listener);
    return view;
  }

  release(cause?: Error): void {
    if (this.failure !== null) return;
    this.failure = new PartitionReleasedError(this.name, cause);
    for (const buffer of this.memory) buffer.recycle();
    this.onMemoryChange(-this.memoryBytes);
    this.memory = [];
    this.memoryBytes = 0;
    // A run still gathering; one being written is recycled when its write returns.
    if (!this.writing) for (const buffer of this.writeQueue.splice(0)) buffer.recycle();
    for (const view of this.views) view.fail();
    this.views.clear();
    // The name goes at once; the open file lives on until the I/O in flight is done.
    if (this.fd !== null) fs.rmSync(this.file, { force: true });
    this.closeFileWhenIdle();
    this.wakeFinishers();
  }

  /** For views: the i-th buffer, or null if it must be read from disk. */
  memoryBuffer(i: number): NetworkBuffer | null {
    return this.isSpilled ? null : this.memory[i].retain();
  }

  /**
   * For views: reads buffers `from` on of the spill file, up to `max` of them, into
   * buffers of the pool: the first waits for the pool, the rest are only those it can
   * spare now, leaving its minimum (a buffer for each subpartition's view, and one) to the
   * other views, whose consumers may be the ones that can go on.
   */
  async readSpilled(from: number, max: number): Promise<NetworkBuffer[]> {
    const targets: NetworkBuffer[] = [];
    try {
      const end = Math.min(this.offsets.length, from + max);
      for (let i = from; i < end; i++) {
        const target = this.types[i] === DataType.EVENT ? unpooledBuffer(Buffer.allocUnsafe(this.lengths[i]), DataType.EVENT) : i === from ? await this.pool.requestBufferAsync() : this.spareBuffer();
        if (target === null) break;
        targets.push(target);
      }
      if (this.fd === null || this.failure !== null) throw this.failure ?? new SpillwayError('SPW_ERR_PARTITION_RELEASED', `${this.name} has no file`);
      await this.readFile(this.fd, targets, from);
      return targets;
    } catch (error) {
      for (const target of targets) target.recycle();
      throw error;
    }
  }

  private spareBuffer(): NetworkBuffer | null {
    return this.pool.buffersInUse + this.pool.min < this.pool.limit ? this.pool.requestBuffer() : null;
  }

  private async readFile(fd: number, targets: NetworkBuffer[], from: number): Promise<void> {
    this.reads++;
    try {
      await readBuffersAt(fd, this.offsets[from], targets, this.lengths.slice(from, from + targets.length), `spill file of ${this.name}`);
    } finally {
      this.reads--;
      if (this.failure !== null) this.closeFileWhenIdle();
    }
  }

  get isReady(): boolean {
    return this.ready;
  }

  get failureCause(): Error | null {
    return this.failure;
  }

  forgetView(view: SpillableView): void {
    this.views.delete(view);
  }

  private enqueueWrite(buffer: NetworkBuffer): void {
    this.writeQueue.push(buffer);
    if (!this.writing && (this.writeQueue.length >= this.runLength() || this.flushing)) this.writeBatch();
  }

  private writeBatch(): void {
    if (this.failure !== null) for (const buffer of this.writeQueue.splice(0)) buffer.recycle();
    // Between runs only what fills one is written, unless a flush asked for everything; once all is written the flush is done.
    const batch = this.writeQueue.length >= this.runLength() || this.flushing ? this.writeQueue.splice(0, MAX_WRITE_BATCH) : [];
    if (this.writeQueue.length === 0 && !this.finished) this.flushing = false;
    if (batch.length === 0 || this.fd === null) {
      for (const buffer of batch) buffer.recycle();
      this.writing = false;
      if (this.failure !== null) this.closeFileWhenIdle();
      this.markReadyIfWritten();
      return;
    }
    this.writing = true;
    const { chunks, offsets, end } = encodeBuffers(batch, this.fileSize);
    const done = (error: Error | null): void => {
      batch.forEach((buffer, i) => {
        if (!error) {
          this.offsets.push(offsets[i]);
          this.lengths.push(buffer.size);
          this.types.push(buffer.dataType);
        }
        buffer.recycle();
      });
      if (error) this.release(error);
      else {
        networkCounters.spilledBytes += end - this.fileSize;
        this.fileSize = end;
      }
      this.writeBatch();
    };
    writeFully(this.fd, chunks, this.fileSize).then(() => done(null), done);
  }

  private markReadyIfWritten(): void {
    if (!this.finished || this.writing || this.writeQueue.length > 0 || this.ready) {
      if (this.failure !== null) this.wakeFinishers();
      return;
    }
    this.ready = this.failure === null;
    this.wakeFinishers();
    if (this.ready) for (const view of this.views) view.notifyAvailable();
  }

  private wakeFinishers(): void {
    for (const check of this.whenWritten.splice(0)) check();
  }

  private closeFileWhenIdle(): void {
    if (this.writing || this.reads > 0 || this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    fs.close(fd, () => {});
  }
}

class SpillableView implements ResultSubpartitionView {
  private next = 0;
  private dataPolled = 0;
  /** Buffers read ahead from the spill file, from `next` on. */
  private prefetched: NetworkBuffer[] = [];
  private reading = false;
  private error: Error | null = null;
  private released = false;

  constructor(
    private readonly subpartition: SpillableSubpartition,
    private readonly listener: AvailabilityListener,
  ) {}

  pollNext(): NetworkBuffer | null {
    if (this.error !== null) throw this.error;
    const sub = this.subpartition;
    if (!sub.isReady || this.released || this.next >= sub.bufferCount) return null;
    let buffer = this.prefetched.shift() ?? null;
    if (buffer === null) {
      buffer = sub.memoryBuffer(this.next);
      if (buffer === null) {
        this.prefetch();
        return null;
      }
    }
    this.next++;
    if (!buffer.isEvent) this.dataPolled++;
    if (sub.isSpilled) this.prefetch();
    return buffer;
  }

  get backlog(): number {
    return this.subpartition.dataBufferCount - this.dataPolled;
  }

  get isConsumed(): boolean {
    return this.subpartition.isReady && this.next >= this.subpartition.bufferCount;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.recyclePrefetched();
    this.subpartition.forgetView(this);
  }

  notifyAvailable(): void {
    this.listener();
  }

  fail(): void {
    this.error = this.subpartition.failureCause;
    this.recyclePrefetched();
    this.listener();
  }

  private recyclePrefetched(): void {
    for (const buffer of this.prefetched.splice(0)) buffer.recycle();
  }

  /** Reads the next run of buffers from disk ahead of the consumer's polls, once fewer than half a run are left. */
  private prefetch(): void {
    const from = this.next + this.prefetched.length;
    if (this.reading || this.prefetched.length > READ_AHEAD / 2 || from >= this.subpartition.bufferCount) return;
    this.reading = true;
    this.subpartition.readSpilled(from, READ_AHEAD).then(
      (buffers) => {
        this.reading = false;
        if (this.released || this.error !== null) {
          for (const buffer of buffers) buffer.recycle();
          return;
        }
        const wasEmpty = this.prefetched.length === 0;
        this.prefetched.push(...buffers);
        if (wasEmpty) this.listener();
      },
      (error: Error) => {
        this.reading = false;
        if (this.released) return;
        this.error ??= error;
        this.listener();
      },
    );
  }
}

import fs from 'node:fs';
import { DataType, NetworkBuffer, unpooledBuffer } from '../buffer/NetworkBuffer.js';
import type { BufferPool } from '../buffer/BufferPool.js';
import { EventType, eventBuffer } from '../serialization/Events.js';
import { encodeBuffers, readBufferAt, writeFully } from './PartitionFile.js';
import {
  PartitionReleasedError,
  type AvailabilityListener,
  type ResultSubpartition,
  type ResultSubpartitionView,
} from './ResultSubpartition.js';
import { networkCounters } from '../NetworkCounters.js';
import { SpillwayError } from '../../errors/Errors.js';

/** How many buffers one writev() takes at most (each is two chunks: header and payload). */
const MAX_WRITE_BATCH = 128;

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
  ) {}

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

  /** For views: reads the i-th buffer of the spill file into a buffer of the pool. */
  async readSpilled(i: number): Promise<NetworkBuffer> {
    const length = this.lengths[i];
    const type = this.types[i];
    const buffer =
      type === DataType.EVENT ? unpooledBuffer(Buffer.allocUnsafe(length), type) : await this.pool.requestBufferAsync();
    try {
      if (this.fd === null || this.failure !== null) throw this.failure ?? new SpillwayError('SPW_ERR_PARTITION_RELEASED', `${this.name} has no file`);
      await this.readFile(this.fd, buffer, this.offsets[i]);
      return buffer;
    } catch (error) {
      buffer.recycle();
      throw error;
    }
  }

  private async readFile(fd: number, target: NetworkBuffer, position: number): Promise<void> {
    this.reads++;
    try {
      await readBufferAt(fd, position, target, `spill file of ${this.name}`);
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
    if (!this.writing) this.writeBatch();
  }

  private writeBatch(): void {
    if (this.failure !== null) for (const buffer of this.writeQueue.splice(0)) buffer.recycle();
    const batch = this.writeQueue.splice(0, MAX_WRITE_BATCH);
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
  private prefetched: NetworkBuffer | null = null;
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
    let buffer = this.prefetched;
    if (buffer !== null) {
      this.prefetched = null;
    } else {
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
    this.prefetched?.recycle();
    this.prefetched = null;
    this.subpartition.forgetView(this);
  }

  notifyAvailable(): void {
    this.listener();
  }

  fail(): void {
    this.error = this.subpartition.failureCause;
    this.prefetched?.recycle();
    this.prefetched = null;
    this.listener();
  }

  /** Reads the next buffer from disk ahead of the consumer's poll. */
  private prefetch(): void {
    if (this.reading || this.prefetched !== null || this.next >= this.subpartition.bufferCount) return;
    this.reading = true;
    this.subpartition.readSpilled(this.next).then(
      (buffer) => {
        this.reading = false;
        if (this.released || this.error !== null) {
          buffer.recycle();
          return;
        }
        this.prefetched = buffer;
        this.listener();
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

import fs from 'node:fs';
import path from 'node:path';
import { compressInPlace } from '../../buffer/BufferCodec.js';
import type { CompressionCodec } from '../../buffer/CompressionCodec.js';
import { DataType, unpooledBuffer, type NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import type { BufferPool } from '../../buffer/BufferPool.js';
import type { PartitionConfig, PartitionStorage, PartitionType } from './PartitionType.js';
import { partitionType } from './PartitionTypes.js';
import type { ResultPartitionWriter } from '../../ResultPartitionWriter.js';
import type { AvailabilityListener, ResultSubpartitionView } from './ResultSubpartition.js';
import { PartitionReleasedError } from './ResultSubpartition.js';
import { SpillwayError } from '../../../errors/Errors.js';

export interface ResultPartitionOptions {
  /** Unique within the cluster; opaque to the network layer. */
  id: string;
  /** The type, or the name it is registered under. */
  type: PartitionType | string;
  numSubpartitions: number;
  /** The partition's own buffers; destroyed with it. */
  pool: BufferPool;
  /** Where a type that writes to disk puts its files (a folder per partition is made in it). */
  spillDir?: string;
  /** Bytes a type that spills keeps in memory before it writes to disk. */
  memoryBudget?: number;
  /** Buffers each subpartition of a pipelined partition may queue (sizing only). */
  buffersPerSubpartition?: number;
  /** The TaskManager's bounded pool for reading partitions back from disk. */
  readPool?: () => BufferPool;
  /**
   * Compress buffers written here with this codec (where the type allows it). A task thread
   * compresses its buffers itself before they reach the partition; this is for writers in the same thread.
   */
  compression?: CompressionCodec | null;
}

/** See ResultPartition.bufferStats(). */
export interface PartitionBufferStats {
  queued: number;
  spilled: number;
  handedOut: number;
}

/**
 * The data one task produces for one output edge: one subpartition per consumer
 * subtask, kept the way its PartitionType's storage keeps it. What every type shares
 * lives here: the first-buffer announcement, finish once, release once (which fails
 * readers, deletes files and destroys the pool).
 */
export class ResultPartition implements ResultPartitionWriter {
  readonly id: string;
  readonly type: PartitionType;
  readonly pool: BufferPool;
  readonly numSubpartitions: number;
  private readonly storage: PartitionStorage;
  private readonly dir: string | null;
  private readonly compression: CompressionCodec | null;
  private firstBuffer = true;
  private finishing: Promise<void> | null = null;
  private released = false;
  /** Called once, with the first buffer or at finish if there was none: a pipelined partition is then ready to consume. */
  onFirstBuffer: () => void = () => {};
  /** Called when every subpartition of a partition that is not re-readable has been read to its end. */
  onConsumed: () => void = () => {};

  constructor(options: ResultPartitionOptions) {
    const { id, numSubpartitions, pool } = options;
    if (!Number.isInteger(numSubpartitions) || numSubpartitions < 1) {
      throw new SpillwayError('SPW_ERR_INTERNAL', `partition ${id}: ${numSubpartitions} subpartitions`);
    }
    this.id = id;
    this.type = typeof options.type === 'string' ? partitionType(options.type) : options.type;
    this.pool = pool;
    this.numSubpartitions = numSubpartitions;
    this.compression = this.type.isCompressible ? (options.compression ?? null) : null;
    this.dir = options.spillDir === undefined ? null : path.join(options.spillDir, fileName(id));
    const config: PartitionConfig = {
      segmentSize: pool.segmentSize,
      buffersPerSubpartition: options.buffersPerSubpartition ?? 128,
      // Every subpartition's buffer being filled, plus one, must fit beside the kept ones.
      memoryBudget: Math.min(options.memoryBudget ?? Infinity, Math.max(0, pool.max - numSubpartitions - 1) * pool.segmentSize),
    };
    const readPool = options.readPool ?? ((): BufferPool => pool);
    this.storage = this.type.createStorage({
      id,
      numSubpartitions,
      pool,
      config,
      spillDir: this.dir ?? '',
      readPool,
      consumed: () => this.onConsumed(),
    });
  }

  get isReleased(): boolean {
    return this.released;
  }

  /** Bytes written to disk so far. */
  get bytesSpilled(): number {
    return this.storage.bytesOnDisk;
  }

  /**
   * Where this partition's buffers are now: queued in memory for their readers, in
   * spill files, and handed out of the queues (on their way to a consumer or held by
   * one) but not yet back in the pool. Buffers a writer is filling count in none.
   */
  bufferStats(filling: number): PartitionBufferStats {
    const { queued, spilled } = this.storage.bufferCounts?.() ?? { queued: 0, spilled: 0 };
    return { queued, spilled, handedOut: Math.max(0, this.pool.buffersInUse - filling - queued) };
  }

  add(buffer: NetworkBuffer, subpartition: number): void {
    if (subpartition < 0 || subpartition >= this.numSubpartitions) {
      buffer.recycle();
      throw new SpillwayError('SPW_ERR_INTERNAL', `partition ${this.id} has no subpartition ${subpartition}`);
    }
    this.notifyFirstBuffer();
    if (this.compression !== null) compressInPlace(buffer, this.compression);
    this.storage.add(buffer, subpartition);
  }

  broadcast(buffer: NetworkBuffer): void {
    this.notifyFirstBuffer();
    if (this.compression !== null) compressInPlace(buffer, this.compression);
    this.storage.broadcast(buffer);
  }

  addEvent(event: Uint8Array, subpartition: number): void {
    if (this.released) throw new PartitionReleasedError(`partition ${this.id}`);
    const bytes = Buffer.from(event);
    if (subpartition >= 0) this.add(unpooledBuffer(bytes, DataType.EVENT), subpartition);
    else for (let s = 0; s < this.numSubpartitions; s++) this.add(unpooledBuffer(bytes, DataType.EVENT), s);
  }

  addPriorityEvent(event: Uint8Array): Buffer[][] {
    if (this.released) throw new PartitionReleasedError(`partition ${this.id}`);
    this.notifyFirstBuffer();
    const overtaken: Buffer[][] = [];
    for (let s = 0; s < this.numSubpartitions; s++) {
      const buffer = unpooledBuffer(Buffer.from(event), DataType.EVENT);
      if (this.storage.addPriority) overtaken.push(this.storage.addPriority(buffer, s));
      else {
        this.storage.add(buffer, s);
        overtaken.push([]);
      }
    }
    return overtaken;
  }

  /** Ends every subpartition; resolves when all of it is readable (files written). */
  finish(): Promise<void> {
    // A producer that wrote nothing still produces end-of-partition: its consumers must learn of it.
    this.notifyFirstBuffer();
    this.finishing ??= this.released ? Promise.reject(new PartitionReleasedError(`partition ${this.id}`)) : this.storage.finish();
    return this.finishing;
  }

  /** The writer found the pool empty: a type that keeps buffers may free some. */
  onPoolExhausted(): void {
    if (!this.released) this.storage.onPoolExhausted();
  }

  createSubpartitionView(index: number, listener: AvailabilityListener): ResultSubpartitionView {
    if (!Number.isInteger(index) || index < 0 || index >= this.numSubpartitions) throw new SpillwayError('SPW_ERR_PARTITION_NOT_FOUND', `partition ${this.id} has no subpartition ${index}`);
    if (this.released) throw new PartitionReleasedError(`partition ${this.id}`);
    return this.storage.createReadView(index, listener);
  }

  release(cause?: Error): void {
    if (this.released) return;
    this.released = true;
    this.storage.release(cause ?? new SpillwayError('SPW_ERR_PARTITION_RELEASED', 'released'));
    this.pool.destroy();
    // A type's files live in the partition's own folder: whatever it left goes with it (open files live on until closed).
    if (this.dir !== null) fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private notifyFirstBuffer(): void {
    if (!this.firstBuffer) return;
    this.firstBuffer = false;
    this.onFirstBuffer();
  }
}

/** A partition id as a file name. */
function fileName(id: string): string {
  return id.replace(/[^\w.-]/g, '_');
}

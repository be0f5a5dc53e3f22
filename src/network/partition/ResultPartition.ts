import fs from 'node:fs';
import path from 'node:path';
import type { NetworkBuffer } from '../buffer/NetworkBuffer.js';
import type { BufferPool } from '../buffer/BufferPool.js';
import { PipelinedSubpartition } from './PipelinedSubpartition.js';
import { SpillableSubpartition } from './SpillableSubpartition.js';
import type { ResultPartitionWriter } from './ResultPartitionWriter.js';
import type { AvailabilityListener, ResultSubpartition, ResultSubpartitionView } from './ResultSubpartition.js';

/** pipelined: streaming, read while produced; blocking: read after the producer finished, re-readable. */
export type PartitionType = 'pipelined' | 'blocking';

export interface ResultPartitionOptions {
  /** Unique within the cluster; opaque to the network layer. */
  id: string;
  type: PartitionType;
  numSubpartitions: number;
  /** The partition's own buffers; destroyed with it. */
  pool: BufferPool;
  /** Blocking only: where spill files go. */
  spillDir?: string;
  /** Blocking only: bytes kept in memory before subpartitions spill. */
  memoryBudget?: number;
}

/** See ResultPartition.bufferStats(). */
export interface PartitionBufferStats {
  queued: number;
  spilled: number;
  handedOut: number;
}

/**
 * The data one task produces for one output edge: one subpartition per consumer
 * subtask. Owns its BufferPool; release() drops all data, fails readers and deletes
 * spill files.
 */
export class ResultPartition implements ResultPartitionWriter {
  readonly id: string;
  readonly type: PartitionType;
  readonly pool: BufferPool;
  private readonly subpartitions: ResultSubpartition[];
  private readonly spillables: SpillableSubpartition[] = [];
  private readonly memoryBudget: number;
  private memoryInUse = 0;
  private consumedSubpartitions = 0;
  private firstBuffer = true;
  private finishing: Promise<void> | null = null;
  private released = false;
  /** Called once, with the first buffer or at finish if there was none: a pipelined partition is then ready to consume. */
  onFirstBuffer: () => void = () => {};
  /** Called when every subpartition of a pipelined partition has been read to its end. */
  onConsumed: () => void = () => {};

  constructor(options: ResultPartitionOptions) {
    const { id, type, numSubpartitions, pool } = options;
    if (!Number.isInteger(numSubpartitions) || numSubpartitions < 1) {
      throw new RangeError(`partition ${id}: ${numSubpartitions} subpartitions`);
    }
    this.id = id;
    this.type = type;
    this.pool = pool;
    // Every subpartition's buffer being filled, plus one, must fit beside the kept ones.
    const keepable = Math.max(0, pool.max - numSubpartitions - 1) * pool.segmentSize;
    this.memoryBudget = Math.min(options.memoryBudget ?? keepable, keepable);
    this.subpartitions = [];
    for (let i = 0; i < numSubpartitions; i++) this.subpartitions.push(this.createSubpartition(i, options));
  }

  get numSubpartitions(): number {
    return this.subpartitions.length;
  }

  get isReleased(): boolean {
    return this.released;
  }

  /** Bytes written to spill files so far. */
  get bytesSpilled(): number {
    return this.spillables.reduce((sum, s) => sum + s.bytesOnDisk, 0);
  }

  /**
   * Where this partition's buffers are now: queued in memory for their readers, in
   * spill files, and handed out of the queues (on their way to a consumer or held by
   * one) but not yet back in the pool. Buffers a writer is filling count in none.
   */
  bufferStats(filling: number): PartitionBufferStats {
    let queued = 0;
    let spilled = 0;
    for (const s of this.subpartitions) {
      queued += s.buffersInMemory;
      spilled += s.buffersOnDisk;
    }
    return { queued, spilled, handedOut: Math.max(0, this.pool.buffersInUse - filling - queued) };
  }

  add(buffer: NetworkBuffer, subpartition: number): void {
    this.notifyFirstBuffer();
    this.subpartitions[subpartition].add(buffer);
  }

  /** Ends every subpartition; resolves when all of it is readable (spill files written). */
  finish(): Promise<void> {
    // A producer that wrote nothing still produces end-of-partition: its consumers must learn of it.
    this.notifyFirstBuffer();
    // Reading a spilled subpartition takes buffers of this pool: none may stay kept in memory then,
    // since network memory is shared and the pool may be held to its minimum by the time consumers read.
    if (this.finishing === null && this.spillables.some((s) => s.isSpilled)) for (const s of this.spillables) s.spill();
    this.finishing ??= Promise.all(this.subpartitions.map((s) => s.finish())).then(() => {});
    return this.finishing;
  }

  /**
   * The writer found the pool empty. Buffers a blocking partition keeps in memory come
   * back only through the disk, and the pool may never reach the maximum the budget
   * was sized for (network memory is shared): unless a spill write is under way,
   * which will return buffers, spill the largest subpartition held in memory.
   */
  onPoolExhausted(): void {
    if (this.spillables.some((s) => s.isWriting)) return;
    this.spillLargest();
  }

  createSubpartitionView(index: number, listener: AvailabilityListener): ResultSubpartitionView {
    const subpartition = this.subpartitions[index];
    if (!subpartition) throw new RangeError(`partition ${this.id} has no subpartition ${index}`);
    return subpartition.createReadView(listener);
  }

  release(cause?: Error): void {
    if (this.released) return;
    this.released = true;
    for (const subpartition of this.subpartitions) subpartition.release(cause);
    this.pool.destroy();
  }

  private notifyFirstBuffer(): void {
    if (!this.firstBuffer) return;
    this.firstBuffer = false;
    this.onFirstBuffer();
  }

  private createSubpartition(index: number, options: ResultPartitionOptions): ResultSubpartition {
    const name = `subpartition ${index} of partition ${options.id}`;
    if (options.type === 'pipelined') {
      return new PipelinedSubpartition(index, name, () => {
        if (++this.consumedSubpartitions === this.subpartitions.length) this.onConsumed();
      });
    }
    if (!options.spillDir) throw new Error(`blocking partition ${options.id} needs a spill directory`);
    fs.mkdirSync(options.spillDir, { recursive: true });
    const file = path.join(options.spillDir, `${options.id.replace(/[^\w.-]/g, '_')}.${index}.spill`);
    const spillable = new SpillableSubpartition(index, name, file, options.pool, (delta) => this.accountMemory(delta));
    this.spillables.push(spillable);
    return spillable;
  }

  /** Keeps the in-memory bytes of a blocking partition within budget by spilling its largest subpartitions. */
  private accountMemory(delta: number): void {
    this.memoryInUse += delta;
    while (this.memoryInUse > this.memoryBudget && this.spillLargest());
  }

  /** Spills the subpartition with the most bytes in memory; false if none holds any. */
  private spillLargest(): boolean {
    let largest: SpillableSubpartition | null = null;
    for (const s of this.spillables) {
      if (!s.isSpilled && s.bytesInMemory > 0 && (largest === null || s.bytesInMemory > largest.bytesInMemory)) largest = s;
    }
    largest?.spill();
    return largest !== null;
  }
}

import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import type { PartitionStorage } from './PartitionType.js';
import type { AvailabilityListener, ResultSubpartition, ResultSubpartitionView } from './ResultSubpartition.js';

/**
 * A partition's storage as one ResultSubpartition per consumer, each keeping its own
 * buffers (Flink's BufferWritingResultPartition): what the pipelined and blocking
 * types use, and the easy way for a type of one's own. A broadcast buffer is shared:
 * each subpartition holds a reference of its own.
 */
export class SubpartitionedStorage<S extends ResultSubpartition = ResultSubpartition> implements PartitionStorage {
  protected readonly subpartitions: S[];

  constructor(subpartitions: S[]) {
    this.subpartitions = subpartitions;
  }

  get bytesOnDisk(): number {
    return 0;
  }

  bufferCounts(): { queued: number; spilled: number } {
    let queued = 0;
    let spilled = 0;
    for (const s of this.subpartitions) {
      queued += s.buffersInMemory ?? 0;
      spilled += s.buffersOnDisk ?? 0;
    }
    return { queued, spilled };
  }

  add(buffer: NetworkBuffer, subpartition: number): void {
    this.subpartitions[subpartition].add(buffer);
  }

  addPriority(buffer: NetworkBuffer, subpartition: number): Buffer[] {
    const target = this.subpartitions[subpartition];
    if (target.addPriority) return target.addPriority(buffer);
    target.add(buffer);
    return [];
  }

  broadcast(buffer: NetworkBuffer): void {
    const last = this.subpartitions.length - 1;
    try {
      for (let i = 0; i < last; i++) this.subpartitions[i].add(buffer.retain());
    } catch (error) {
      buffer.recycle();
      throw error;
    }
    this.subpartitions[last].add(buffer);
  }

  async finish(): Promise<void> {
    await Promise.all(this.subpartitions.map((s) => s.finish()));
  }

  createReadView(subpartition: number, listener: AvailabilityListener): ResultSubpartitionView {
    return this.subpartitions[subpartition].createReadView(listener);
  }

  onPoolExhausted(): void {}

  release(cause: Error): void {
    for (const subpartition of this.subpartitions) subpartition.release(cause);
  }
}

import type { ResultPartition } from './ResultPartition.js';
import type { AvailabilityListener, ResultSubpartitionView } from './ResultSubpartition.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** A request for a partition this process does not (yet) have; consumers retry it. */
export class PartitionNotFoundError extends SpillwayError {
  constructor(readonly partitionId: string) {
    super('SPW_ERR_PARTITION_NOT_FOUND', `partition ${partitionId} not found`);
    this.name = 'PartitionNotFoundError';
  }
}

/**
 * A process's registry of the partitions it produces; serves read requests for
 * them, local and remote. A partition that cannot be read again is released once
 * fully consumed, a re-readable one only when told.
 */
export class ResultPartitionManager {
  private readonly partitions = new Map<string, ResultPartition>();
  /** Bytes the released partitions had written to disk. */
  private releasedBytesOnDisk = 0;

  register(partition: ResultPartition): void {
    if (this.partitions.has(partition.id)) throw new SpillwayError('SPW_ERR_INTERNAL', `partition ${partition.id} is registered already`);
    this.partitions.set(partition.id, partition);
    if (!partition.type.isReReadable) partition.onConsumed = () => this.release(partition.id);
  }

  get(id: string): ResultPartition | undefined {
    return this.partitions.get(id);
  }

  get size(): number {
    return this.partitions.size;
  }

  ids(): string[] {
    return [...this.partitions.keys()];
  }

  /** Bytes every partition of this process ever wrote to disk (files, headers included). */
  get bytesWrittenToDisk(): number {
    let bytes = this.releasedBytesOnDisk;
    for (const partition of this.partitions.values()) bytes += partition.bytesSpilled;
    return bytes;
  }

  createSubpartitionView(id: string, subpartition: number, listener: AvailabilityListener): ResultSubpartitionView {
    const partition = this.partitions.get(id);
    if (!partition) throw new PartitionNotFoundError(id);
    return partition.createSubpartitionView(subpartition, listener);
  }

  release(id: string, cause?: Error): void {
    const partition = this.partitions.get(id);
    if (!partition) return;
    this.partitions.delete(id);
    this.releasedBytesOnDisk += partition.bytesSpilled;
    partition.release(cause);
  }

  /** Releases every partition whose id matches, for example all of one job's. */
  releaseWhere(matches: (id: string) => boolean, cause?: Error): void {
    for (const id of [...this.partitions.keys()]) if (matches(id)) this.release(id, cause);
  }
}

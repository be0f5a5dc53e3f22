import type { NetworkBuffer } from './buffer/NetworkBuffer.js';

/** The buffers a RecordWriter fills, from its partition's pool. */
export interface WriterBufferPool {
  readonly segmentSize: number;
  /** Buffers of the pool handed out and not yet recycled, wherever they are. */
  readonly buffersInUse: number;
  /** A buffer now, or null when the pool is exhausted; the caller owns it. */
  requestBuffer(): NetworkBuffer | null;
  /** A buffer, waiting while the pool is exhausted (that wait is backpressure); rejects if the pool is destroyed. */
  requestBufferAsync(): Promise<NetworkBuffer>;
}

/**
 * What a RecordWriter writes into (Flink's ResultPartitionWriter): the partition
 * itself in the producing thread, or a task thread's handle on a partition that
 * lives in the network thread.
 */
export interface ResultPartitionWriter {
  readonly id: string;
  readonly numSubpartitions: number;
  readonly pool: WriterBufferPool;
  /** Appends a filled buffer to a subpartition; ownership passes. Throws if the partition failed or was released. */
  add(buffer: NetworkBuffer, subpartition: number): void;
  /** Appends a filled buffer to every subpartition (a broadcast); ownership passes. A type may store it once. */
  broadcast(buffer: NetworkBuffer): void;
  /**
   * Appends an event (Events.ts: its bytes) to subpartition `subpartition`, or to every
   * one for -1, behind the buffers added before it. Throws if the partition failed.
   */
  addEvent(event: Uint8Array, subpartition: number): void;
  /**
   * Puts an unaligned checkpoint barrier (its bytes) ahead of what every subpartition has
   * queued; gives, by subpartition, copies of the data buffers it overtook (the output
   * channel state its task stores with the checkpoint). Throws if the partition failed.
   */
  addPriorityEvent(event: Uint8Array): Uint8Array[][] | Promise<Uint8Array[][]>;
  /** Ends every subpartition; resolves once all of it is readable (a blocking partition's files written). */
  finish(): Promise<void>;
  /** The writer found the pool empty: a partition that keeps buffers may free some (spill). */
  onPoolExhausted(): void;
}

import type { BufferPool } from '../../buffer/BufferPool.js';
import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import type { AvailabilityListener, ResultSubpartitionView } from './ResultSubpartition.js';

/**
 * A kind of result partition, registered under its name (Flink's ResultPartitionType,
 * made pluggable). It carries its behaviour: call sites ask `isPipelined` or
 * `isReReadable`, never the name. The built-in types (BuiltinPartitionTypes.ts)
 * are registered through the same API as a type loaded with `--partition-type FILE`.
 */
export interface PartitionType {
  /** What jobs name it by (`exchange`); unique in a process. */
  readonly name: string;
  /**
   * Can the partition be consumed while it is produced? Then it is announced to the
   * JobManager with its first buffer, and its consumers may be deployed from then on;
   * otherwise it is announced once finished (every byte readable).
   */
  readonly isPipelined: boolean;
  /**
   * Can a finished partition be read again, by a consumer that restarts? Then it is
   * kept until its job releases it, and bounds a failover region; otherwise it is
   * released once every subpartition has been read to its end.
   */
  readonly isReReadable: boolean;
  /** Whether `compression` applies to its edges (off for a pipelined exchange, as in Flink). */
  readonly isCompressible: boolean;
  /** How it uses network memory and disk, in a word or two, for GET /jobs/:id and docs. */
  readonly storage: string;
  /**
   * The network buffers its pool needs at least (deployment fails when they do not
   * fit) and may take at most, for a partition of `numSubpartitions`.
   */
  poolSize(numSubpartitions: number, config: PartitionConfig): { min: number; max: number };
  /** Makes the storage of one partition: where its buffers go and how they are read. */
  createStorage(context: PartitionContext): PartitionStorage;
}

/** The TaskManager's settings a partition type sizes itself by. */
export interface PartitionConfig {
  readonly segmentSize: number;
  /** Buffers each subpartition of a pipelined partition may queue. */
  readonly buffersPerSubpartition: number;
  /** Bytes a partition that spills keeps in memory before it writes to disk. */
  readonly memoryBudget: number;
}

/** What a partition's storage is made with. */
export interface PartitionContext {
  /** Unique in the cluster; safe to use in a file name once `fileName` has cleaned it. */
  readonly id: string;
  readonly numSubpartitions: number;
  /** The partition's own buffers: what it is given arrives from them, and it may write into them. */
  readonly pool: BufferPool;
  readonly config: PartitionConfig;
  /** A folder of this TaskManager's spill directory, for the partition's files. */
  readonly spillDir: string;
  /** The TaskManager's bounded pool for reading partitions back from disk, made on first use. */
  readPool(): BufferPool;
  /** Tell once every subpartition has been read to its end (a type that is not re-readable is then released). */
  consumed(): void;
}

/**
 * The data of one partition, as a type keeps it. Called in the thread that owns the
 * partition; nothing here may block. Ownership of every buffer given passes to it.
 */
export interface PartitionStorage {
  /** Appends a buffer of records to one subpartition. Throws if the data was released. */
  add(buffer: NetworkBuffer, subpartition: number): void;
  /**
   * Puts an unaligned checkpoint barrier ahead of what one subpartition has queued and
   * returns copies of the data buffers it overtook; a type without it has the barrier
   * appended (it then overtakes nothing).
   */
  addPriority?(buffer: NetworkBuffer, subpartition: number): Buffer[];
  /** Appends the same buffer to every subpartition (a broadcast); a type may write it once. */
  broadcast(buffer: NetworkBuffer): void;
  /** No more buffers: every subpartition ends. Resolves once all of it is readable (its files written). */
  finish(): Promise<void>;
  /** A reader of one subpartition; throws if it cannot be read (released, or read once already). */
  createReadView(subpartition: number, listener: AvailabilityListener): ResultSubpartitionView;
  /** The writer found the pool empty: free buffers if the type keeps some (a spill). */
  onPoolExhausted(): void;
  /** Drops all data, fails readers with the cause and deletes any file. Called once. */
  release(cause: Error): void;
  /** Bytes written to disk so far. */
  readonly bytesOnDisk: number;
  /** Buffers queued in memory for readers and buffers on disk now, for metrics; a type without it reports none. */
  bufferCounts?(): { queued: number; spilled: number };
}

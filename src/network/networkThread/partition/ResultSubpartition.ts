import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** Called when a view that had nothing to give has data (or an error) again. */
export type AvailabilityListener = () => void;

/**
 * A consumer's handle on one subpartition. pollNext() never waits: it returns null
 * when nothing is ready, and the listener given at creation fires once something is.
 */
export interface ResultSubpartitionView {
  /** The next buffer (data or event); the caller owns it and recycles it. Throws if the subpartition failed. */
  pollNext(): NetworkBuffer | null;
  /** Data buffers ready after the last one polled: the sender's backlog. */
  readonly backlog: number;
  /** True once the end-of-partition event has been polled. */
  readonly isConsumed: boolean;
  /** The consumer is gone: drop what it has not read. */
  release(): void;
}

/** The data one task produces for one consumer subtask. */
export interface ResultSubpartition {
  readonly index: number;
  /** Producer side: appends a buffer whose ownership passes to the subpartition. */
  add(buffer: NetworkBuffer): void;
  /** Producer side: an unaligned checkpoint barrier, put ahead of what is queued; returns copies of the data buffers it overtook. A type without it appends it. */
  addPriority?(buffer: NetworkBuffer): Buffer[];
  /** Producer side: no more buffers; appends end-of-partition. A promise, if any, resolves once all of it is readable. */
  finish(): void | Promise<void>;
  createReadView(listener: AvailabilityListener): ResultSubpartitionView;
  /** Buffers held in memory (data and events), written and not yet read; a type that does not tell counts none. */
  readonly buffersInMemory?: number;
  /** Buffers in its spill file, kept for every reader; a type that does not tell counts none. */
  readonly buffersOnDisk?: number;
  /** Drops everything, fails readers with the cause, and deletes any file. */
  release(cause?: Error): void;
}

/** A released partition, reported to readers that were still reading it. */
export class PartitionReleasedError extends SpillwayError {
  constructor(what: string, cause?: Error) {
    super('SPW_ERR_PARTITION_RELEASED', `${what} was released${cause ? `: ${cause.message}` : ''}`, { cause });
    this.name = 'PartitionReleasedError';
  }
}

import type { NetworkBuffer } from './buffer/NetworkBuffer.js';

/** Where an input channel reads from: one subpartition of one producer's partition. */
export interface SubpartitionAddress {
  partitionId: string;
  subpartition: number;
}

/** Tells the gate that a channel which had nothing now has data, or an error. */
export interface ChannelAvailability {
  notifyChannelNonEmpty(channel: InputChannel): void;
  /** The channel has an unaligned checkpoint barrier at its head: it is served next (where that is told apart). */
  notifyPriority?(channel: InputChannel): void;
}

/**
 * A consumer's connection to one producer subpartition, local or remote. The gate
 * polls it only after it announced data; pollNext() throws if the channel failed.
 */
export interface InputChannel {
  /** Position of the channel in its gate. */
  readonly channelIndex: number;
  readonly address: SubpartitionAddress;
  /** Starts reading; data is announced through the gate. */
  requestSubpartition(): void;
  pollNext(): NetworkBuffer | null;
  /**
   * Copies of the data buffers the last unaligned barrier went ahead of here (it was put
   * at the head of the channel's queue): they stay queued and are read after it; the
   * copies are stored with the checkpoint. Given once; a channel that tells no barrier apart gives none.
   */
  takeOvertaken?(): Buffer[];
  /** Stops reading and frees what the channel holds. */
  release(): void;
}

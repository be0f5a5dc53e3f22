import type { ReaderState } from '../../network/taskThread/serialization/RecordDeserializer.js';

/**
 * FLIP-76's channel state: the data an unaligned checkpoint barrier overtook, stored with
 * the checkpoint as the bytes of the buffers it went ahead of. The producer stores what
 * it overtook in each output subpartition's queue; the consumer what it overtook in each
 * input channel's queue, with the channel's reader as it was then (the record structures
 * it had learnt and a batch it had begun). Neither waits for the slow task to read them.
 * On a restore the consumer reads its copies first, then the producer sends its own
 * again, ahead of anything new: the channel's bytes arrive as they would have.
 */

/** What the barrier overtook in one output subpartition, oldest first. */
export interface OutputInFlight {
  partition: number;
  subpartition: number;
  buffers: Uint8Array[];
}

/** What the barrier overtook at one input channel, and the channel's reader when it came. */
export interface InputInFlight {
  input: number;
  channel: number;
  reader: ReaderState;
  buffers: Uint8Array[];
}

/** Bytes of the buffers stored, for the checkpoint's statistics. */
export function inFlightSize(data: readonly { buffers: readonly Uint8Array[] }[]): number {
  let bytes = 0;
  for (const { buffers } of data) for (const buffer of buffers) bytes += buffer.length;
  return bytes;
}

import { decompress } from './BufferCodec.js';
import type { NetworkBuffer } from './NetworkBuffer.js';

/**
 * A copy of a data buffer's records that an unaligned checkpoint barrier went ahead of
 * (FLIP-76's channel state), in this thread's memory and uncompressed: the buffer stays
 * where it is and goes on to its consumer; the copy is stored with the checkpoint and,
 * on a restore, sent (producer) or read (consumer) again before anything new.
 */
export function inFlightCopy(buffer: NetworkBuffer): Buffer {
  if (!buffer.compressed) return Buffer.from(buffer.bytes());
  // decompress() recycles what it reads: the queued buffer keeps its own reference.
  buffer.retain();
  return decompress(buffer, buffer.capacity).bytes();
}

import { compressSync, uncompressSync } from 'snappy';
import { NetworkBuffer, UNPOOLED } from './NetworkBuffer.js';

/**
 * Buffer compression (Flink's BufferCompressor and BufferDecompressor), with Snappy:
 * a buffer of records is compressed as one block in the producing task thread, kept
 * so only when smaller, and flagged (`compressed`) wherever it goes: the handover,
 * the wire and the partition files. The consuming task thread decompresses it.
 */

/** Compresses a data buffer's bytes in place when that makes them smaller, and flags it. */
export function compressInPlace(buffer: NetworkBuffer): void {
  if (buffer.isEvent || buffer.compressed || buffer.size === 0) return;
  const packed = compressSync(buffer.bytes());
  if (packed.length >= buffer.size) return;
  packed.copy(buffer.segment, 0);
  buffer.size = packed.length;
  buffer.compressed = true;
}

/**
 * The records of a compressed buffer, in a buffer of this thread's own memory; the
 * compressed one is recycled. Corrupt bytes fail with a message, never with records.
 */
export function decompress(buffer: NetworkBuffer, maxBytes: number): NetworkBuffer {
  let bytes: Buffer;
  try {
    bytes = uncompressSync(buffer.bytes(), { asBuffer: true }) as Buffer;
  } catch (error) {
    throw new Error(`a compressed buffer of ${buffer.size} bytes is corrupt: ${(error as Error).message}`, { cause: error });
  } finally {
    buffer.recycle();
  }
  if (bytes.length > maxBytes) throw new Error(`a compressed buffer unpacks to ${bytes.length} bytes, more than a buffer of ${maxBytes} holds`);
  const plain = new NetworkBuffer(bytes, UNPOOLED);
  plain.size = bytes.length;
  return plain;
}

import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';
import { compressSync, uncompressSync } from 'snappy';
import { copyBytes } from './Bytes.js';
import { COMPRESSION_CODECS, type CompressionCodec } from './CompressionCodec.js';
import { NetworkBuffer, UNPOOLED } from './NetworkBuffer.js';
import { SpillwayError } from '../../errors/Errors.js';

/**
 * Buffer compression (Flink's BufferCompressor and BufferDecompressor): a buffer of
 * records is compressed as one block in the producing task thread, kept so only when
 * smaller, and flagged (`compressed`) wherever it goes: the handover, the wire and the
 * partition files. The consuming task thread decompresses it.
 *
 * Two codecs, as Flink offers LZ4 beside ZSTD (`taskmanager.network.compression.codec`):
 * - `snappy` (the default): an LZ77 codec without entropy coding, fast both ways. It
 *   finds only repeats, so text of random-letter words shrinks less than 2x.
 * - `brotli` at quality 0: LZ77 with Huffman-coded literals, in Node's own zlib (Node 20
 *   has no zstd). Slower both ways, but letters cost about 5 bits instead of 8.
 * The block's first byte names its codec, so a reader needs no setting to read it.
 */

interface Codec {
  compress(bytes: Buffer): Buffer;
  /** Fails rather than make more than `maxBytes`. */
  decompress(block: Buffer, maxBytes: number): Buffer;
}

/** Brotli's smallest window, 2^10 bytes; a window as large as the buffer finds every repeat in it. */
const MIN_BROTLI_WINDOW_BITS = 10;

const CODECS: Record<CompressionCodec, Codec> = {
  snappy: {
    compress: (bytes) => compressSync(bytes),
    decompress: (block) => uncompressSync(block, { asBuffer: true }) as Buffer,
  },
  brotli: {
    compress: (bytes) =>
      brotliCompressSync(bytes, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: 0,
          [constants.BROTLI_PARAM_LGWIN]: Math.max(MIN_BROTLI_WINDOW_BITS, Math.ceil(Math.log2(bytes.length))),
          [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
        },
      }),
    // One output chunk as large as a buffer: zlib's 16 KiB default would join two for every full buffer.
    decompress: (block, maxBytes) => brotliDecompressSync(block, { maxOutputLength: maxBytes, chunkSize: Math.max(maxBytes, 64) }),
  },
};

/** The codec a compressed block names in its first byte: its index in COMPRESSION_CODECS. */
const CODEC_BYTES = 1;

/** Compresses a data buffer's bytes in place with `codec` when that makes them smaller, and flags it. */
export function compressInPlace(buffer: NetworkBuffer, codec: CompressionCodec): void {
  if (buffer.isEvent || buffer.compressed || buffer.size === 0) return;
  const packed = CODECS[codec].compress(buffer.bytes());
  if (packed.length + CODEC_BYTES >= buffer.size) return;
  buffer.segment[0] = COMPRESSION_CODECS.indexOf(codec);
  copyBytes(packed, 0, buffer.segment, CODEC_BYTES, packed.length);
  buffer.size = packed.length + CODEC_BYTES;
  buffer.compressed = true;
}

/**
 * The records of a compressed buffer, in a buffer of this thread's own memory; the
 * compressed one is recycled. Corrupt bytes fail with a message, never with records.
 */
export function decompress(buffer: NetworkBuffer, maxBytes: number): NetworkBuffer {
  let bytes: Buffer;
  try {
    const codec = COMPRESSION_CODECS[buffer.segment[0]];
    if (codec === undefined) throw new SpillwayError('SPW_ERR_COMPRESSION', `its first byte names no codec (${buffer.segment[0]})`);
    bytes = CODECS[codec].decompress(buffer.bytes().subarray(CODEC_BYTES), maxBytes);
  } catch (error) {
    throw new SpillwayError('SPW_ERR_COMPRESSION', `a compressed buffer of ${buffer.size} bytes is corrupt: ${(error as Error).message}`, { cause: error });
  } finally {
    buffer.recycle();
  }
  if (bytes.length > maxBytes) throw new SpillwayError('SPW_ERR_COMPRESSION', `a compressed buffer unpacks to ${bytes.length} bytes, more than a buffer of ${maxBytes} holds`);
  const plain = new NetworkBuffer(bytes, UNPOOLED);
  plain.size = bytes.length;
  return plain;
}

/**
 * Buffer compression, property-style: random buffers of random sizes, text-like and
 * random bytes, through every codec; what comes back is the bytes that went in, a
 * buffer is kept compressed only when that made it smaller, and a damaged block fails
 * with a message.
 */
import { describe, expect, test } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { compressInPlace, decompress } from '../../src/network/buffer/BufferCodec.js';
import { COMPRESSION_CODECS, compressionCodec } from '../../src/network/buffer/CompressionCodec.js';
import { NetworkBuffer, type BufferRecycler } from '../../src/network/buffer/NetworkBuffer.js';

const CAPACITY = 32 * 1024;
const WORDS = ['the', 'shuffle', 'of', 'records', 'über', 'слово', '字', 'a', 'partition'];

class CountingRecycler implements BufferRecycler {
  recycled = 0;
  recycle(): void {
    this.recycled++;
  }
}

function filled(bytes: Buffer, recycler: BufferRecycler): NetworkBuffer {
  const buffer = new NetworkBuffer(Buffer.alloc(CAPACITY), recycler);
  bytes.copy(buffer.segment);
  buffer.size = bytes.length;
  return buffer;
}

function textLike(random: () => number, size: number): Buffer {
  const words: string[] = [];
  // Counted as it grows: measuring the whole text after each word took seconds a buffer.
  for (let bytes = 0; bytes < size; ) {
    const word = `${WORDS[Math.floor(random() * WORDS.length)]} `;
    words.push(word);
    bytes += Buffer.byteLength(word);
  }
  return Buffer.from(words.join('')).subarray(0, size);
}

function noise(random: () => number, size: number): Buffer {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = Math.floor(random() * 256);
  return bytes;
}

describe.each(COMPRESSION_CODECS)('codec %s', (codec) => {
  test('random buffers come back byte for byte; compressed only when smaller', () => {
    const random = seededRandom(codec.length * 7919);
    for (let i = 0; i < 100; i++) {
      const size = 1 + Math.floor(random() * CAPACITY);
      const bytes = random() < 0.5 ? textLike(random, size) : noise(random, size);
      const recycler = new CountingRecycler();
      const buffer = filled(bytes, recycler);
      compressInPlace(buffer, codec);
      if (!buffer.compressed) {
        expect(buffer.bytes().equals(bytes), `buffer ${i} left as it was`).toBe(true);
        continue;
      }
      expect(buffer.size, `buffer ${i} smaller`).toBeLessThan(bytes.length);
      const plain = decompress(buffer, CAPACITY);
      expect(plain.bytes().equals(bytes), `buffer ${i} of ${size} bytes`).toBe(true);
      expect(recycler.recycled, 'the compressed buffer is recycled').toBe(1);
    }
  });

  test('text shrinks; random bytes are left uncompressed', () => {
    const random = seededRandom(3);
    const text = filled(textLike(random, CAPACITY), new CountingRecycler());
    compressInPlace(text, codec);
    expect(text.compressed).toBe(true);
    const bytes = filled(noise(random, CAPACITY), new CountingRecycler());
    compressInPlace(bytes, codec);
    expect(bytes.compressed).toBe(false);
  });

  test('a truncated block fails with a message and its buffer is recycled', () => {
    const recycler = new CountingRecycler();
    const buffer = filled(textLike(seededRandom(5), CAPACITY), recycler);
    compressInPlace(buffer, codec);
    buffer.size = Math.floor(buffer.size / 2);
    expect(() => decompress(buffer, CAPACITY)).toThrow(expect.objectContaining({ code: 'SPW_ERR_COMPRESSION' }));
    expect(recycler.recycled).toBe(1);
  });
});

test('a block that names no codec fails with a message', () => {
  const buffer = filled(textLike(seededRandom(9), 4096), new CountingRecycler());
  compressInPlace(buffer, 'snappy');
  buffer.segment[0] = 200;
  expect(() => decompress(buffer, CAPACITY)).toThrow(expect.objectContaining({ code: 'SPW_ERR_COMPRESSION', message: expect.stringContaining('(200)') }));
});

test('a block that unpacks past a buffer fails rather than grow', () => {
  const buffer = filled(textLike(seededRandom(11), CAPACITY), new CountingRecycler());
  compressInPlace(buffer, 'brotli');
  expect(() => decompress(buffer, 1024)).toThrow(expect.objectContaining({ code: 'SPW_ERR_COMPRESSION' }));
});

test('a compression setting names its codec: true is the default, false none, anything else an error', () => {
  expect(compressionCodec(true)).toBe('snappy');
  expect(compressionCodec(false)).toBeNull();
  expect(compressionCodec(undefined)).toBeNull();
  expect(compressionCodec('brotli')).toBe('brotli');
  expect(() => compressionCodec('zip')).toThrow('compression must be true, false or a codec (snappy, brotli), not "zip"');
  expect(() => compressionCodec(1)).toThrow(expect.objectContaining({ code: 'SPW_ERR_COMPRESSION' }));
});

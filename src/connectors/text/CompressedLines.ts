import type { Compression } from '../compression/Compression.js';
import { readDecompressed } from '../compression/Decompressor.js';

const NEWLINE = 0x0a;

/**
 * Calls onRun with each run of whole lines of a compressed file, decompressed as a
 * stream, as data[start, end) (the lines and the newlines between them; the run's own
 * newline, if it has one, is at `end`): the same runs the plain reader gives, so text,
 * chunks and JSON Lines read a `.gz` or `.zst` file as they read a plain one. Each run's
 * data is a buffer of its own, which onRun may keep.
 */
export async function readCompressedRuns(
  file: string,
  compression: Compression,
  onRun: (data: Buffer, start: number, end: number) => Promise<void>,
): Promise<void> {
  let tail: Buffer | undefined;
  await readDecompressed(file, compression, async (piece) => {
    const data = tail === undefined ? Buffer.from(piece) : Buffer.concat([tail, piece]);
    const last = data.lastIndexOf(NEWLINE);
    if (last < 0) {
      tail = data;
      return;
    }
    tail = last + 1 < data.length ? data.subarray(last + 1) : undefined;
    await onRun(data, 0, last);
  });
  // The file's last line has no newline.
  if (tail !== undefined && tail.length > 0) await onRun(tail, 0, tail.length);
}

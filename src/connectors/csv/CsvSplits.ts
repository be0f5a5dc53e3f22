import fs from 'node:fs';
import { compressionOfFile } from '../compression/Compression.js';
import { readDecompressed } from '../compression/Decompressor.js';
import { countNewlines, lineAt, MalformedInputError } from '../MalformedInput.js';
import type { RecordAligner, Resumable, TextSplit } from '../text/TextSplits.js';

/**
 * CSV's record boundaries, found by quote parity. Under RFC 4180 a quote character
 * stands only in quoted fields, where a quote of the text is doubled, so a newline is
 * inside a quoted field exactly when an odd number of quotes come before it in the file.
 * The JobManager's splits of a file are handed out in order from its start, each
 * starting at a boundary, so parity is counted from the previous cut only: the file is
 * scanned once, with Buffer.indexOf for quotes and newlines (GB/s where quotes are few).
 * A reader parses exactly its split's bytes, none cut or read twice.
 */

const NEWLINE = 0x0a;
const BLOCK = 1 << 20;

/** Moves a split's end to the first record boundary at or after it (the JobManager's side). */
export class QuoteParityAligner implements RecordAligner {
  private readonly quote: number;

  constructor(quote: string) {
    this.quote = quote.charCodeAt(0);
  }

  boundary(file: string, start: number, end: number, size: number): number {
    const fd = fs.openSync(file, 'r');
    try {
      return this.scan(fd, start, Math.max(start, end - 1), size);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Counts quotes in [start, from), then finds the first newline at even parity from `from` on; its next byte, or `size`. */
  private scan(fd: number, start: number, from: number, size: number): number {
    const quote = this.quote;
    const buffer = Buffer.allocUnsafe(BLOCK);
    let odd = false;
    for (let position = start; position < size; ) {
      const read = fs.readSync(fd, buffer, 0, Math.min(BLOCK, size - position), position);
      if (read === 0) break;
      const block = buffer.subarray(0, read);
      let i = 0;
      if (position < from) {
        const stop = Math.min(read, from - position);
        for (let q = block.indexOf(quote); q >= 0 && q < stop; q = block.indexOf(quote, q + 1)) odd = !odd;
        i = stop;
      }
      let newline = block.indexOf(NEWLINE, i);
      while (i < read) {
        const q = block.indexOf(quote, i);
        if (odd) {
          if (q < 0) break;
          odd = false;
          i = q + 1;
          if (newline >= 0 && newline < i) newline = block.indexOf(NEWLINE, i);
          continue;
        }
        if (newline >= 0 && (q < 0 || newline < q)) return position + newline + 1;
        if (q < 0) break;
        odd = true;
        i = q + 1;
      }
      position += read;
    }
    return size;
  }
}

/** Whole records of a split: data[start, end), and where they are in the file. */
export interface RecordChunk {
  data: Buffer;
  start: number;
  end: number;
  /** Whether data[start] is the file's first byte (its header, if it has one). */
  first: boolean;
  /** The line (1-based, from the file's start) that data[index] is on; reads the file before the chunk, so only for errors. */
  lineOf(index: number): number;
}

/** The scanner's state across blocks: whether an odd number of quotes came since the last cut. */
interface Parity {
  odd: boolean;
}

/**
 * Calls onChunk with runs of whole records of the split, about a megabyte at a time,
 * each cut at a newline of even quote parity: the split's own bytes (or, for a
 * compressed file, all of it, decompressed as a stream). A split that ends inside an
 * open quote (only the file's last can) fails with SPW_ERR_MALFORMED_INPUT naming the
 * line the quote opens on.
 */
export async function readRecordChunks(
  split: TextSplit,
  quote: string,
  at: Resumable,
  onChunk: (chunk: RecordChunk) => void | Promise<void>,
): Promise<void> {
  const q = quote.charCodeAt(0);
  const compressed = compressionOfFile(split.file);
  const parity: Parity = { odd: false };
  // The bytes since the last cut, and their file offset.
  let carry: Buffer | undefined;
  let carryOffset = split.start;
  // Compressed: newlines before carry, as the file cannot be read again to count them.
  let linesBefore = 0;
  const lineOf = (data: Buffer, dataOffset: number) => (index: number): number =>
    compressed === undefined ? lineAt(split.file, dataOffset + index) : linesBefore + countNewlines(data, 0, index) + 1;

  const take = async (piece: Buffer): Promise<void> => {
    const data = carry === undefined ? piece : Buffer.concat([carry, piece]);
    const from = carry === undefined ? 0 : carry.length;
    const cut = lastBoundary(data, from, q, parity);
    if (cut < 0) {
      carry = Buffer.from(data);
      return;
    }
    // A plain file's reader could resume here: the chunk's records all start at or after it.
    if (compressed === undefined) await at(carryOffset);
    await onChunk({ data, start: 0, end: cut, first: carryOffset === 0, lineOf: lineOf(data, carryOffset) });
    if (compressed !== undefined) linesBefore += countNewlines(data, 0, cut);
    carry = cut < data.length ? Buffer.from(data.subarray(cut)) : undefined;
    carryOffset += cut;
  };

  if (compressed !== undefined) {
    if (split.start !== 0) return;
    await readDecompressed(split.file, compressed, take);
  } else {
    const fd = fs.openSync(split.file, 'r');
    try {
      for (let position = split.start; position < split.end; ) {
        const buffer = Buffer.allocUnsafe(Math.min(BLOCK, split.end - position));
        const read = fs.readSync(fd, buffer, 0, buffer.length, position);
        if (read === 0) break;
        position += read;
        await take(buffer.subarray(0, read));
      }
    } finally {
      fs.closeSync(fd);
    }
  }
  if (parity.odd) {
    // No newline after the last cut is at even parity: the record that starts there never closes, and its first quote opens it.
    const data = carry ?? Buffer.alloc(0);
    const opened = Math.max(0, data.indexOf(q));
    const line = compressed === undefined ? lineAt(split.file, carryOffset + opened) : linesBefore + countNewlines(data, 0, opened) + 1;
    throw new MalformedInputError(split.file, { line }, `a quoted field opened on this line is never closed (an unterminated ${quote})`);
  }
  // The file's last record has no newline.
  if (carry !== undefined && carry.length > 0) {
    if (compressed === undefined) await at(carryOffset);
    await onChunk({ data: carry, start: 0, end: carry.length, first: carryOffset === 0, lineOf: lineOf(carry, carryOffset) });
  }
}

/**
 * Scans data[from, ...) for quotes and newlines, with `parity` as it stood at `from`
 * (updated to the end); the index after the last newline at even parity in the whole
 * of data, or -1 if there is none from `from` on.
 */
function lastBoundary(data: Buffer, from: number, quote: number, parity: Parity): number {
  let cut = -1;
  let i = from;
  let odd = parity.odd;
  // The next newline at or after i (-1: none), kept across quotes, which may be many on a line.
  let newline = data.indexOf(NEWLINE, i);
  for (;;) {
    const q = data.indexOf(quote, i);
    if (odd) {
      if (q < 0) break;
      odd = false;
      i = q + 1;
      if (newline >= 0 && newline < i) newline = data.indexOf(NEWLINE, i);
      continue;
    }
    if (q < 0) {
      const last = data.lastIndexOf(NEWLINE);
      if (last >= i) cut = last + 1;
      break;
    }
    for (; newline >= 0 && newline < q; newline = data.indexOf(NEWLINE, newline + 1)) cut = newline + 1;
    odd = true;
    i = q + 1;
  }
  parity.odd = odd;
  return cut;
}

/** A quote of the delimiter sets (for the aligner's sake: the same quote the parser uses). */
export const DEFAULT_QUOTE = '"';
export const DEFAULT_DELIMITER = ',';

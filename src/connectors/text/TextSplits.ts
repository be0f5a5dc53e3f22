import { isAscii } from 'node:buffer';
import fs from 'node:fs';
import path from 'node:path';
import { SpillwayError } from '../../errors/Errors.js';
import { compressionOfFile } from '../compression/Compression.js';
import type { SplitSupply } from '../SplitAssigner.js';
import { readCompressedRuns } from './CompressedLines.js';

/**
 * A byte range of one file; it owns every line that starts inside it. A compressed
 * file (`.gz`, `.zst`) is never cut: the split that starts at its byte 0 reads all of
 * it, decompressed as a stream, and any other split of it reads nothing.
 */
export interface TextSplit {
  file: string;
  start: number;
  end: number;
}

/** The files an input names: a file, every file of a folder, or a glob in the last path part (`*`, `?`). */
export function listInputFiles(input: string): string[] {
  const stat = statOrNull(input);
  if (stat?.isFile()) return [input];
  if (stat?.isDirectory()) return filesIn(input, () => true);
  const base = path.basename(input);
  if (/[*?]/.test(base)) {
    const dir = path.dirname(input);
    if (!statOrNull(dir)?.isDirectory()) throw new SpillwayError('SPW_ERR_SOURCE_IO', `input folder ${dir} does not exist`);
    const pattern = new RegExp(`^${base.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
    const files = filesIn(dir, (name) => pattern.test(name));
    if (files.length === 0) throw new SpillwayError('SPW_ERR_SOURCE_IO', `input ${input} matches no file`);
    return files;
  }
  throw new SpillwayError('SPW_ERR_SOURCE_IO', `input ${input} does not exist`);
}

/**
 * Cuts the files into about equal byte ranges and gives subtask i of n its contiguous
 * share: fixed splits, for work outside a cluster (a cluster's sources ask the SplitAssigner).
 */
export function splitsFor(files: string[], subtask: number, parallelism: number): TextSplit[] {
  const sizes = files.map((file) => fs.statSync(file).size);
  const total = sizes.reduce((a, b) => a + b, 0);
  const share = Math.max(1, Math.ceil(total / parallelism));
  const from = subtask * share;
  const to = Math.min(total, from + share);
  const splits: TextSplit[] = [];
  let offset = 0;
  files.forEach((file, i) => {
    const start = Math.max(from, offset) - offset;
    const end = Math.min(to, offset + sizes[i]) - offset;
    if (start < end) splits.push({ file, start, end });
    offset += sizes[i];
  });
  return splits;
}

/**
 * The least a split holds (but the input's last): about 2 ms of scanning, more than
 * a request costs, which is made while the previous split is read. The subtasks of a
 * stage end within about one such split of each other.
 */
export const MIN_SPLIT_BYTES = 1 << 18;

/**
 * Moves the end of a split to a record boundary, for formats whose records may span
 * lines (CSV's quoted newlines). Asked for the splits of a file in order, from its
 * start: `start` is the previous split's end (a boundary), `end` where the share ends.
 */
export interface RecordAligner {
  /** The first record boundary at or after `end` (a byte offset just after a record's newline), or `size`. */
  boundary(file: string, start: number, end: number, size: number): number;
}

/**
 * The byte ranges of a text input's files, as the SplitAssigner hands them out: splits
 * shrink as the input runs out (guided self-scheduling: a 1/2p share of what is left,
 * at least MIN_SPLIT_BYTES), so a subtask asks a few times only and all end within
 * about a small split of each other. A compressed file is one split, whole. With an
 * aligner, each cut moves on to a record boundary. The files are listed when it is
 * made: what is added to them later is not read.
 */
export class ByteRangeSupply implements SplitSupply<TextSplit> {
  private readonly files: { file: string; size: number }[];
  private file = 0;
  private offset = 0;
  private remaining: number;

  constructor(
    input: string,
    private readonly parallelism: number,
    private readonly aligner?: RecordAligner,
  ) {
    this.files = listInputFiles(input)
      .map((file) => ({ file, size: fs.statSync(file).size }))
      .filter((f) => f.size > 0);
    this.remaining = this.files.reduce((sum, f) => sum + f.size, 0);
  }

  snapshot(): unknown {
    return { file: this.file, offset: this.offset, remaining: this.remaining };
  }

  restore(state: unknown): void {
    ({ file: this.file, offset: this.offset, remaining: this.remaining } = state as { file: number; offset: number; remaining: number });
  }

  /** The next share of what is left, across file boundaries; one subtask alone gets it all. */
  take(): TextSplit[] {
    const share = this.parallelism === 1 ? this.remaining : Math.max(MIN_SPLIT_BYTES, Math.ceil(this.remaining / (2 * this.parallelism)));
    let wanted = Math.min(share, this.remaining);
    const splits: TextSplit[] = [];
    while (wanted > 0) {
      const { file, size } = this.files[this.file];
      let end = this.offset === 0 && compressionOfFile(file) !== undefined ? size : Math.min(size, this.offset + wanted);
      if (end < size && this.aligner !== undefined) end = this.aligner.boundary(file, this.offset, end, size);
      splits.push({ file, start: this.offset, end });
      wanted -= end - this.offset;
      this.remaining -= end - this.offset;
      this.offset = end;
      if (end === size) {
        this.file++;
        this.offset = 0;
      }
    }
    return splits;
  }
}

const CHUNK = 1 << 20;
const NEWLINE = 0x0a;
/**
 * Reads are synchronous: a task thread has nothing else to do while it waits, and an
 * asynchronous read would cost a hop through libuv's thread pool and back per chunk,
 * which on a busy machine waits for a core (about 8% of a scan with both cores
 * scanning). The thread's event loop still turns after every this many bytes, so its
 * messages (a cancel) and timers (its counters) get through.
 */
const YIELD_BYTES = 8 << 20;
/** About the size of a chunk readChunks gives: small enough to stay in the CPU cache while it is worked on. */
export const TEXT_CHUNK = 1 << 16;

/**
 * Calls onLine with each line (without its newline) that starts in the split. A split
 * that does not begin a file skips the line in progress, which the previous split
 * reads to its end, so no line is cut or read twice. Whole runs of lines are decoded
 * at once, not line by line.
 */
export async function readLines(
  split: TextSplit,
  onLine: (line: string) => void | Promise<void>,
  chunkSize = CHUNK,
  at: Resumable = NOWHERE,
): Promise<void> {
  // One buffer for the whole split (decoding copies the text out).
  const resumable = resumableIn(split, at);
  await readLineRuns(split, chunkSize, true, (data, start, end, offset) => emitPieces(data, start, end, onLine, offset, resumable));
}

/**
 * Told the file offset of each line a reader could resume at, before the lines from it
 * on are given out (a checkpoint's position: `{ ...split, start: offset }` reads the rest).
 */
export type Resumable = (offset: number) => void | Promise<void>;
const NOWHERE: Resumable = () => undefined;

/** What is left of a split from the offset of a line (or record) its reader could resume at: what starts there or later. */
export function resumeTextSplit(split: TextSplit, offset: unknown): TextSplit {
  return { ...split, start: offset as number };
}

/**
 * Where a split's reader can resume: at any line of a plain file; nowhere inside a
 * compressed one, which is read whole from its start (a checkpoint waits for its end).
 */
function resumableIn(split: TextSplit, at: Resumable): Resumable {
  return compressionOfFile(split.file) === undefined ? at : NOWHERE;
}

/**
 * Calls onChunk with the bytes of the lines that start in the split, whole lines of
 * about `chunkBytes` or more at a time (a longer line is a chunk of its own), each
 * line with its newline but the file's last if it has none. The same lines as
 * readLines, undecoded: a chunk of UTF-8 text never cuts a character. A chunk is the
 * caller's to keep: it is never overwritten (each read fills a fresh buffer), unless
 * `reuse` reads every chunk into one buffer, each chunk valid only until onChunk
 * (and the promise it returns) is done: no fresh memory to fault in per read.
 */
export async function readChunks(
  split: TextSplit,
  onChunk: (chunk: Buffer) => void | Promise<void>,
  { chunkBytes = TEXT_CHUNK, readSize = CHUNK, reuse = false, at = NOWHERE }: { chunkBytes?: number; readSize?: number; reuse?: boolean; at?: Resumable } = {},
): Promise<void> {
  const resumable = resumableIn(split, at);
  await readLineRuns(split, readSize, reuse, async (data, start, end, offset) => {
    // The run's own newline at `end`, if it has one, goes with its last line.
    const stop = end < data.length ? end + 1 : end;
    while (start < stop) {
      const newline = stop - start > chunkBytes ? data.indexOf(NEWLINE, start + chunkBytes - 1) : -1;
      const to = newline < 0 || newline >= stop ? stop : newline + 1;
      const resumed = resumable(offset + start);
      if (resumed) await resumed;
      const waiting = onChunk(data.subarray(start, to));
      if (waiting) await waiting;
      start = to;
    }
  });
}

/**
 * Reads the split's file and calls onRun with each run of whole lines that start in
 * the split, as data[start, end): the lines and the newlines between them; a newline
 * ends the run at `end` unless end is data.length (the file's last line has none).
 * `reuse` reads every chunk into one buffer (the caller must be done with data when
 * onRun returns); otherwise each read fills a fresh buffer, so data may be kept.
 */
async function readLineRuns(
  split: TextSplit,
  chunkSize: number,
  reuse: boolean,
  onRun: (data: Buffer, start: number, end: number, offset: number) => Promise<void>,
): Promise<void> {
  const compression = compressionOfFile(split.file);
  if (compression !== undefined) {
    // Offsets of the decompressed text are no place to resume a split at: readers are told none (resumableIn).
    if (split.start === 0) await readCompressedRuns(split.file, compression, (data, start, end) => onRun(data, start, end, Number.NaN));
    return;
  }
  const fd = fs.openSync(split.file, 'r');
  try {
    let position = split.start === 0 ? 0 : split.start - 1;
    let skipping = split.start !== 0;
    let buffer = Buffer.allocUnsafe(reuse ? 2 * chunkSize : 0);
    // The line in progress, moved to the start of the buffer the next chunk is read in after.
    let tail = buffer.subarray(0, 0);
    let sinceYield = 0;
    for (;;) {
      if (sinceYield >= YIELD_BYTES) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
      const kept = tail.length;
      if (!reuse) buffer = Buffer.allocUnsafe(kept + chunkSize);
      else if (buffer.length - kept < chunkSize) buffer = Buffer.allocUnsafe(kept + chunkSize);
      tail.copy(buffer, 0);
      const bytesRead = fs.readSync(fd, buffer, kept, chunkSize, position);
      sinceYield += bytesRead;
      const data = buffer.subarray(0, kept + bytesRead);
      const dataStart = position - kept;
      position += bytesRead;
      if (bytesRead === 0) {
        // The file's last line has no newline.
        if (!skipping && data.length > 0 && dataStart < split.end) await onRun(data, 0, data.length, dataStart);
        return;
      }
      let cursor = 0;
      if (skipping) {
        const newline = data.indexOf(NEWLINE);
        if (newline < 0) {
          tail = buffer.subarray(0, 0);
          continue;
        }
        cursor = newline + 1;
        skipping = false;
      }
      if (dataStart + cursor >= split.end) return;
      // Our last line ends at the first newline at or after split.end - 1.
      const stop = data.indexOf(NEWLINE, Math.max(cursor, split.end - 1 - dataStart));
      const last = stop >= 0 ? stop : data.lastIndexOf(NEWLINE);
      if (last >= cursor) {
        await onRun(data, cursor, last, dataStart);
        cursor = last + 1;
      }
      if (stop >= 0) return;
      tail = data.subarray(cursor);
    }
  } finally {
    fs.closeSync(fd);
  }
}

const PIECE = 1 << 16;

/**
 * Decodes the lines of data[start, end) a piece of about PIECE bytes at a time, so each
 * piece's string is small enough to be allocated young and die young rather than in
 * the old generation (a large object), where every chunk would hasten a full GC.
 */
async function emitPieces(data: Buffer, start: number, end: number, onLine: (line: string) => void | Promise<void>, offset: number, at: Resumable): Promise<void> {
  for (;;) {
    const newline = end - start > PIECE ? data.indexOf(NEWLINE, start + PIECE) : -1;
    if (newline < 0 || newline >= end) break;
    await at(offset + start);
    await emitLines(decode(data, start, newline), onLine);
    start = newline + 1;
  }
  await at(offset + start);
  await emitLines(decode(data, start, end), onLine);
}

/** UTF-8 text; ASCII (checked in a fraction of the time) decodes to the same string several times faster as Latin-1. */
function decode(data: Buffer, start: number, end: number): string {
  return data.toString(isAscii(data.subarray(start, end)) ? 'latin1' : 'utf8', start, end);
}

/** Calls onLine with each line of text (lines separated by newlines, none at the end). */
async function emitLines(text: string, onLine: (line: string) => void | Promise<void>): Promise<void> {
  let from = 0;
  for (;;) {
    const newline = text.indexOf('\n', from);
    const waiting = onLine(newline < 0 ? text.slice(from) : text.slice(from, newline));
    if (waiting) await waiting;
    if (newline < 0) return;
    from = newline + 1;
  }
}

function filesIn(dir: string, accept: (name: string) => boolean): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.startsWith('.') && accept(entry.name))
    .map((entry) => path.join(dir, entry.name))
    .sort();
}

function statOrNull(p: string): fs.Stats | null {
  try {
    return fs.statSync(p);
  } catch {
    return null;
  }
}

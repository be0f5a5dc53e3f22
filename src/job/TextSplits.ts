import { isAscii } from 'node:buffer';
import fs from 'node:fs';
import path from 'node:path';

/** A byte range of one file; it owns every line that starts inside it. */
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
    if (!statOrNull(dir)?.isDirectory()) throw new Error(`input folder ${dir} does not exist`);
    const pattern = new RegExp(`^${base.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
    const files = filesIn(dir, (name) => pattern.test(name));
    if (files.length === 0) throw new Error(`input ${input} matches no file`);
    return files;
  }
  throw new Error(`input ${input} does not exist`);
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
): Promise<void> {
  // One buffer for the whole split (decoding copies the text out).
  await readLineRuns(split, chunkSize, true, (data, start, end) => emitPieces(data, start, end, onLine));
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
  { chunkBytes = TEXT_CHUNK, readSize = CHUNK, reuse = false }: { chunkBytes?: number; readSize?: number; reuse?: boolean } = {},
): Promise<void> {
  await readLineRuns(split, readSize, reuse, async (data, start, end) => {
    // The run's own newline at `end`, if it has one, goes with its last line.
    const stop = end < data.length ? end + 1 : end;
    while (start < stop) {
      const newline = stop - start > chunkBytes ? data.indexOf(NEWLINE, start + chunkBytes - 1) : -1;
      const to = newline < 0 || newline >= stop ? stop : newline + 1;
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
  onRun: (data: Buffer, start: number, end: number) => Promise<void>,
): Promise<void> {
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
        if (!skipping && data.length > 0 && dataStart < split.end) await onRun(data, 0, data.length);
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
        await onRun(data, cursor, last);
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
async function emitPieces(data: Buffer, start: number, end: number, onLine: (line: string) => void | Promise<void>): Promise<void> {
  for (;;) {
    const newline = end - start > PIECE ? data.indexOf(NEWLINE, start + PIECE) : -1;
    if (newline < 0 || newline >= end) break;
    await emitLines(decode(data, start, newline), onLine);
    start = newline + 1;
  }
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

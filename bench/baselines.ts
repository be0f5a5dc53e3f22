/**
 * Baselines measured in the same run as the engine figures, so that every figure can
 * be given as a ratio on these shared, noisy machines:
 * - raw loopback TCP between two Node processes (bench/loopback.ts, re-exported here);
 * - the ideal pipe: the synthetic job's records msgpackr-encoded into 32 KiB frames by
 *   one process, sent over one socket and decoded by another, no engine around it;
 * - a plain single-process word count (char-code scan, a slice per word, a Map);
 * - a sequential disk write with fdatasync, for the spill rates.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { isAscii } from 'node:buffer';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Unpackr } from 'msgpackr';
import { isWordCodePoint, lowerWordCodePoint } from '../src/job/Tokenizer.js';
import { MiB } from './measure.js';

export { measureLoopback, type LoopbackResult } from './loopback.js';

const PIPE_SENDER = fileURLToPath(new URL('./processes/pipe-sender.js', import.meta.url));

export interface PipeResult {
  records: number;
  /** Frame bytes received, length prefixes included. */
  bytes: number;
  seconds: number;
  recordsPerSec: number;
  mbPerSec: number;
}

/** The ideal pipe: a child process encodes and sends `records` synthetic records, this process decodes every one. */
export async function measureIdealPipe(records: number, recordSize: number, keys: number): Promise<PipeResult> {
  const sender = spawn(process.execPath, [PIPE_SENDER, String(records), String(recordSize), String(keys)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const port = await announcedPort(sender);
    const { bytes, seconds } = await receiveRecords(port, records, keys);
    return { records, bytes, seconds, recordsPerSec: records / seconds, mbPerSec: bytes / seconds / 1e6 };
  } finally {
    sender.kill();
  }
}

function announcedPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    child.once('message', (message: { port: number }) => resolve(message.port));
    child.once('exit', (code) => reject(new Error(`the ideal-pipe sender exited (${code}) before it listened`)));
  });
}

/**
 * Reads length-prefixed frames and unpacks each into its array of records; timed from
 * connect to the last record. The sum of the keys checks that every record arrived intact.
 */
function receiveRecords(port: number, expected: number, keys: number): Promise<{ bytes: number; seconds: number }> {
  return new Promise((resolve, reject) => {
    const unpackr = new Unpackr();
    let pending: Buffer | null = null;
    let count = 0;
    let bytes = 0;
    let keySum = 0;
    let started = 0;
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.on('connect', () => (started = performance.now()));
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      const data: Buffer = pending === null ? chunk : Buffer.concat([pending, chunk]);
      let offset = 0;
      while (data.length - offset >= 4) {
        const length = data.readUInt32LE(offset);
        if (data.length - offset - 4 < length) break;
        const batch = unpackr.unpack(data.subarray(offset + 4, offset + 4 + length)) as { key: number }[];
        // Touch every record as the engine's counting task does, so nothing is decoded in vain.
        for (let i = 0; i < batch.length; i++) keySum += batch[i].key;
        count += batch.length;
        offset += 4 + length;
      }
      pending = offset < data.length ? data.subarray(offset) : null;
      if (count >= expected) {
        const seconds = (performance.now() - started) / 1000;
        socket.destroy();
        const want = expectedKeySum(expected, keys);
        if (count !== expected || keySum !== want) reject(new Error(`ideal pipe: ${count} records, key sum ${keySum}; expected ${expected}, ${want}`));
        else resolve({ bytes, seconds });
      }
    });
    socket.on('error', reject);
    socket.on('end', () => reject(new Error(`the ideal pipe ended after ${count} of ${expected} records`)));
  });
}

/** The sum of i % keys for i < records. */
function expectedKeySum(records: number, keys: number): number {
  const rest = records % keys;
  return Math.floor(records / keys) * ((keys * (keys - 1)) / 2) + (rest * (rest - 1)) / 2;
}

export interface PlainWordCountResult {
  counts: Map<string, number>;
  words: number;
  bytes: number;
  seconds: number;
  mbPerSec: number;
}

/** Per byte: 0 separator, 1 part of a word, 2 an upper-case letter (part of a word, lower-cased). */
const BYTE_CLASS = (() => {
  const table = new Uint8Array(256);
  for (let c = 0x30; c <= 0x39; c++) table[c] = 1;
  for (let c = 0x61; c <= 0x7a; c++) table[c] = 1;
  for (let c = 0x41; c <= 0x5a; c++) table[c] = 2;
  table[0x27] = 1;
  return table;
})();

/**
 * The plain word count: reads the files and counts the words in one Map, one `slice`
 * per word, as fast as one process goes: a char-code scan of the text. Its words are
 * exactly forEachWord's (letters, digits, apostrophes, lower-cased), so the suite checks
 * the engine's counts against these. ASCII text is scanned as Latin-1; text with
 * other characters (the realistic corpus has 5% non-ASCII words) is decoded as UTF-8,
 * which Latin-1 would cut apart, and its non-ASCII characters are looked up in the
 * tokenizer's table of code points.
 */
export function plainWordCount(files: readonly string[]): PlainWordCountResult {
  const started = performance.now();
  const counts = new Map<string, number>();
  let words = 0;
  let bytes = 0;
  for (const file of files) {
    const data = fs.readFileSync(file);
    bytes += data.length;
    words += countWords(data, counts);
  }
  const seconds = (performance.now() - started) / 1000;
  return { counts, words, bytes, seconds, mbPerSec: bytes / seconds / 1e6 };
}

export function countWords(data: Buffer, counts: Map<string, number>): number {
  // Lower-case ASCII in place (the buffer is ours; no UTF-8 sequence holds an ASCII
  // byte), then scan one string: its slices are cheaper Map keys than strings decoded
  // from the bytes one word at a time.
  for (let i = 0; i < data.length; i++) if (BYTE_CLASS[data[i]] === 2) data[i] |= 0x20;
  const ascii = isAscii(data);
  const text = data.toString(ascii ? 'latin1' : 'utf8');
  let words = 0;
  let start = -1;
  // A word with a character whose lower case differs is lower-cased whole, as forEachWord does.
  let upper = false;
  const n = text.length;
  for (let i = 0; i <= n; i++) {
    const c = i < n ? text.charCodeAt(i) : 0x20;
    let part: boolean;
    if (c < 0x80) part = BYTE_CLASS[c] !== 0;
    else if (c < 0xd800 || c > 0xdbff) {
      part = isWordCodePoint(c);
      if (part && lowerWordCodePoint(c) !== c) upper = true;
    } else if (isWordCodePoint(text.codePointAt(i)!)) {
      // A surrogate pair that is a letter or digit outside the BMP (a decoder never makes a lone surrogate).
      if (start < 0) start = i;
      upper = true;
      i++;
      continue;
    } else part = false;
    if (part) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      const slice = text.slice(start, i);
      const word = upper ? slice.toLowerCase() : slice;
      counts.set(word, (counts.get(word) ?? 0) + 1);
      words++;
      start = -1;
      upper = false;
    }
  }
  return words;
}

export interface DiskWriteResult {
  bytes: number;
  seconds: number;
  mbPerSec: number;
}

/** Sequential write of `bytes` in 1 MiB writes to a file in `dir`, then fdatasync; the file is removed. */
export function measureDiskWrite(bytes: number, dir = os.tmpdir()): DiskWriteResult {
  const work = fs.mkdtempSync(path.join(dir, 'spillway-disk-'));
  // Random bytes, so that no layer below can compress them away.
  const chunk = crypto.randomBytes(MiB);
  const fd = fs.openSync(path.join(work, 'sequential'), 'w');
  try {
    const started = performance.now();
    let written = 0;
    while (written < bytes) written += fs.writeSync(fd, chunk);
    fs.fdatasyncSync(fd);
    const seconds = (performance.now() - started) / 1000;
    return { bytes: written, seconds, mbPerSec: written / seconds / 1e6 };
  } finally {
    fs.closeSync(fd);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

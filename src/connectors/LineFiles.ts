import fs from 'node:fs';
import { SpillwayError } from '../errors/Errors.js';
import { extensionOf, type Compression } from './compression/Compression.js';
import { COMPRESSED_BLOCK_BYTES, compressBlock, loadCompressor } from './compression/Compressor.js';
import { openPartSink, type PartFile } from './PartFiles.js';
import type { SinkContext, SinkWriter } from './SinkSpec.js';

/** How a line-oriented sink writes its files: each record as text, after an optional first line, optionally compressed. */
export interface LineFormat {
  /** The sink, for errors: "the text sink". */
  readonly what: string;
  /** The record's text, ending in its newline. */
  format(record: unknown): string;
  /** Written before the first record (a CSV header), given that record (undefined when there was none); '' for nothing. */
  first?(record: unknown): string;
  readonly compression?: Compression;
}

/** Text gathered before a write: 64 KiB, or a compressed block. */
const PLAIN_FLUSH = 1 << 16;

/** Opens a line sink's writer (text, JSON Lines, CSV), its part files committed as PartFiles.ts says. */
export async function openLineSink(dir: string, context: SinkContext, line: LineFormat): Promise<SinkWriter> {
  if (line.compression !== undefined) await loadCompressor(line.compression);
  return openPartSink(line.what, dir, context, extensionOf(line.compression), (file) => openLineFile(file, line));
}

/**
 * One part file of lines: records are formatted into a string that is written every
 * 64 KiB (compressed: every 1 MiB, as one gzip member or zstd frame). Any file system
 * error fails at once, naming the path and the OS error.
 */
async function openLineFile(file: string, line: LineFormat): Promise<PartFile> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, 'w');
  } catch (error) {
    throw new SpillwayError('SPW_ERR_SINK_IO', `${line.what} cannot open ${file}: ${(error as Error).message}`, { cause: error });
  }
  const { compression } = line;
  const flushAt = compression === undefined ? PLAIN_FLUSH : COMPRESSED_BLOCK_BYTES;
  let pending = '';
  let started = line.first === undefined;
  let closed = false;
  let written = false;
  let empty = true;
  const flush = async (last = false): Promise<void> => {
    const text = pending;
    pending = '';
    // A compressed file holds at least one (empty) frame or member: the tools refuse a file of no bytes.
    if (text === '' && !(last && !written && compression !== undefined)) return;
    written = true;
    try {
      if (compression === undefined) await handle.write(text);
      else await handle.write(compressBlock(compression, Buffer.from(text)));
    } catch (error) {
      throw new SpillwayError('SPW_ERR_SINK_IO', `${line.what} cannot write ${file}: ${(error as Error).message}`, { cause: error });
    }
  };
  return {
    get empty() {
      return empty;
    },
    push(record) {
      empty = false;
      if (!started) {
        started = true;
        pending += line.first!(record);
      }
      pending += line.format(record);
      if (pending.length >= flushAt) return flush();
    },
    async close() {
      if (!started) {
        started = true;
        pending += line.first!(undefined);
      }
      await flush(true);
      closed = true;
      await handle.close();
    },
    abort() {
      if (!closed) void handle.close().catch(() => {});
      closed = true;
      fs.rmSync(file, { force: true });
    },
  };
}

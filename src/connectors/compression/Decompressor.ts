import fs from 'node:fs';
import zlib from 'node:zlib';
import { SpillwayError } from '../../errors/Errors.js';
import { MalformedInputError } from '../MalformedInput.js';
import type { Compression } from './Compression.js';

/** Compressed bytes read at a time; a corrupt stream is named to within this many bytes. */
const READ_BYTES = 1 << 16;
/** Decompressed bytes gzip gives at a time. */
const GUNZIP_CHUNK = 1 << 18;
/** The thread's event loop turns after this many compressed bytes of zstd, which is decompressed synchronously. */
const YIELD_BYTES = 4 << 20;

/**
 * Calls onData with the decompressed bytes of a gzip or zstd file, in order, a piece at
 * a time: never the whole file in memory. A piece is valid only until onData (and the
 * promise it returns) is done; copy what is kept. gzip is Node's zlib (several members
 * are read as one stream); zstd is fzstd, in JavaScript (Node 20 has no zstd). A corrupt
 * or truncated stream fails with SPW_ERR_MALFORMED_INPUT naming the file and the
 * compressed byte offset where it was found; an error onData throws goes through as it is.
 */
export function readDecompressed(file: string, compression: Compression, onData: (data: Buffer) => void | Promise<void>): Promise<void> {
  return compression === 'gzip' ? readGzip(file, onData) : readZstd(file, onData);
}

async function readGzip(file: string, onData: (data: Buffer) => void | Promise<void>): Promise<void> {
  const input = fs.createReadStream(file, { highWaterMark: READ_BYTES });
  const gunzip = zlib.createGunzip({ chunkSize: GUNZIP_CHUNK });
  let readError: Error | undefined;
  input.on('error', (error) => {
    readError = error;
    gunzip.destroy(error);
  });
  input.pipe(gunzip);
  const chunks = gunzip[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  try {
    for (;;) {
      let step: IteratorResult<Buffer>;
      try {
        step = await chunks.next();
      } catch (error) {
        if (readError !== undefined) throw new SpillwayError('SPW_ERR_SOURCE_IO', `cannot read ${file}: ${readError.message}`, { cause: readError });
        throw new MalformedInputError(file, { byteOffset: gunzip.bytesWritten }, `corrupt gzip data: ${(error as Error).message}`);
      }
      if (step.done) return;
      const waiting = onData(step.value);
      if (waiting) await waiting;
    }
  } finally {
    input.destroy();
    gunzip.destroy();
  }
}

async function readZstd(file: string, onData: (data: Buffer) => void | Promise<void>): Promise<void> {
  // Imported on first use: a task thread that reads no zstd never loads it.
  const { Decompress } = await import('fzstd');
  const fd = openOrThrow(file);
  try {
    const pieces: Uint8Array[] = [];
    const decompress = new Decompress((piece) => void (piece.length > 0 && pieces.push(piece)));
    let position = 0;
    let sinceYield = 0;
    for (;;) {
      // A fresh buffer each read: fzstd keeps references to input it has not used up yet.
      const buffer = Buffer.allocUnsafe(READ_BYTES);
      const read = fs.readSync(fd, buffer, 0, READ_BYTES, position);
      try {
        decompress.push(buffer.subarray(0, read), read === 0);
      } catch (error) {
        const why = read === 0 ? 'the zstd stream ends inside a frame (truncated)' : `corrupt zstd data: ${(error as Error).message}`;
        throw new MalformedInputError(file, { byteOffset: position }, why);
      }
      position += read;
      for (const piece of pieces.splice(0)) {
        const waiting = onData(Buffer.from(piece.buffer, piece.byteOffset, piece.length));
        if (waiting) await waiting;
      }
      if (read === 0) return;
      sinceYield += read;
      if (sinceYield >= YIELD_BYTES) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

function openOrThrow(file: string): number {
  try {
    return fs.openSync(file, 'r');
  } catch (error) {
    throw new SpillwayError('SPW_ERR_SOURCE_IO', `cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
}

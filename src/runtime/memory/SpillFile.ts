import fs from 'node:fs';
import { crc32 } from '@node-rs/crc32';
import { Packr, Unpackr } from 'msgpackr';
import type { RecordPacker, RecordUnpacker } from './RecordPacker.js';
import { copyBytes } from '../../network/buffer/Bytes.js';
import { flatSize, packFlat } from './FlatRecords.js';
import { SpillwayError } from '../../errors/Errors.js';
import type { SpillFile, SpillOutput } from './OperatorMemory.js';

// A spill file is a sequence of blocks; each block's payload is one msgpack array of records:
// +------------+-----------+-----------------------------------------------------+
// | LENGTH (4) | CRC32 (4) | PAYLOAD (LENGTH): 0xdd, COUNT (4), COUNT records      |
// +------------+-----------+-----------------------------------------------------+
// Big-endian. The CRC covers the payload. Records are packed one by one with a default
// Packr (each carries its own structures), so a block can be laid out of records packed
// earlier, in any order: a sort run is its records' bytes copied in sorted order.

/** A block is written once this many bytes are buffered (or a record does not fit in what is left). */
export const SPILL_BLOCK_BYTES = 1 << 20;
const HEADER_BYTES = 8;
/** A block's payload starts with msgpack's array32 header: 0xdd and the count. */
export const ARRAY_HEADER_BYTES = 5;
export const ARRAY32 = 0xdd;

/** Coded failures of spill files, with the file named in the message. */
export type SpillErrorCode =
  /** The file is not there (removed or never written). */
  | 'SPW_ERR_SPILL_MISSING'
  /** A block does not check out: bad length, checksum, record count, or a short file. */
  | 'SPW_ERR_SPILL_CORRUPT';

export class SpillError extends SpillwayError {
  constructor(
    override readonly code: SpillErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = 'SpillError';
  }
}

/** The Packr of what spills: plain per-record packing, self-contained, so records can be reordered. */
export function recordPackr(): RecordPacker {
  return new Packr();
}

/** Reads what a recordPackr() packed; buffers are copied out, so a read buffer can be reused. */
export function recordUnpackr(): RecordUnpacker {
  return new Unpackr({ copyBuffers: true });
}

export type { SpillFile } from './OperatorMemory.js';

/** How a SpillWriter writes, and whom it tells. */
export interface SpillWriterOptions {
  packr?: RecordPacker;
  /** Default SPILL_BLOCK_BYTES. */
  blockBytes?: number;
  /** Told the size of every block written. */
  written?: (bytes: number) => void;
  /** Told once the file is closed or aborted. */
  ended?: (writer: SpillWriter) => void;
}

/**
 * Appends records to a new spill file in blocks of about SPILL_BLOCK_BYTES. Writes are
 * synchronous: a spill runs in its task's thread, which has nothing else to do meanwhile.
 * close() returns the file; abort() removes it; either closes the descriptor, once.
 */
export class SpillWriter implements SpillOutput {
  private fd: number | null;
  private block: Buffer;
  private position = HEADER_BYTES + ARRAY_HEADER_BYTES;
  private count = 0;
  private records = 0;
  private bytes = 0;
  private readonly packr: RecordPacker;

  constructor(
    readonly path: string,
    private readonly options: SpillWriterOptions = {},
  ) {
    this.packr = options.packr ?? recordPackr();
    this.block = Buffer.allocUnsafe(options.blockBytes ?? SPILL_BLOCK_BYTES);
    this.fd = fs.openSync(path, 'wx');
  }

  /** Appends a record packed with a recordPackr(), copied from `source` between `start` and `end`. */
  addPacked(source: Uint8Array, start = 0, end = source.length): void {
    const length = end - start;
    this.reserve(length);
    // Records are mostly a few dozen bytes: a loop beats Buffer.copy's native call.
    copyBytes(source, start, this.block, this.position, length);
    this.position += length;
    this.count++;
  }

  /** Packs and appends a record: a flat one straight into the block, anything else with the Packr. */
  add(record: unknown): void {
    const size = flatSize(record);
    if (size < 0) return this.addPacked(this.packr.pack(record));
    this.reserve(size);
    this.position = packFlat(record, this.block, this.position);
    this.count++;
  }

  /** Makes room for a record of `length` bytes: writes the block if it is too full, grows it for a record larger than a block. */
  private reserve(length: number): void {
    if (this.position + length <= this.block.length) return;
    this.flush();
    const needed = HEADER_BYTES + ARRAY_HEADER_BYTES + length;
    if (needed > this.block.length) this.block = Buffer.allocUnsafe(needed);
  }

  /** Writes what is buffered and closes the file. */
  close(): SpillFile {
    this.flush();
    this.end();
    return { path: this.path, records: this.records, bytes: this.bytes };
  }

  /** Closes and removes the file; nothing if it was closed already. */
  abort(): void {
    if (this.fd === null) return;
    this.end();
    fs.rmSync(this.path, { force: true });
  }

  private end(): void {
    const fd = this.fd;
    if (fd === null) throw new SpillwayError('SPW_ERR_INTERNAL', `spill file ${this.path} was closed already`);
    this.fd = null;
    fs.closeSync(fd);
    this.options.ended?.(this);
  }

  private flush(): void {
    if (this.count === 0) return;
    const block = this.block;
    const payload = this.position - HEADER_BYTES;
    block[HEADER_BYTES] = ARRAY32;
    block.writeUInt32BE(this.count, HEADER_BYTES + 1);
    block.writeUInt32BE(payload, 0);
    block.writeUInt32BE(crc32(block.subarray(HEADER_BYTES, this.position)), 4);
    const fd = this.fd;
    if (fd === null) throw new SpillwayError('SPW_ERR_INTERNAL', `spill file ${this.path} was closed already`);
    let written = 0;
    while (written < this.position) written += fs.writeSync(fd, block, written, this.position - written);
    this.records += this.count;
    this.bytes += this.position;
    this.options.written?.(this.position);
    this.position = HEADER_BYTES + ARRAY_HEADER_BYTES;
    this.count = 0;
  }
}

/**
 * Reads a spill file back a block at a time, checking every block (length, CRC, count)
 * and that the file holds exactly the records written: anything else is a SpillError
 * that names the file and the offset.
 */
export class SpillReader {
  private readonly fd: number;
  /** Grows to the largest block read: a reader holds about one block. */
  private buffer = Buffer.alloc(0);
  private readonly header = Buffer.allocUnsafe(HEADER_BYTES);
  private offset = 0;
  private read = 0;
  private closed = false;

  constructor(
    readonly file: SpillFile,
    private readonly unpackr: RecordUnpacker = recordUnpackr(),
  ) {
    try {
      this.fd = fs.openSync(file.path, 'r');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new SpillError('SPW_ERR_SPILL_MISSING', `spill file ${file.path} is gone (removed while its task ran?)`, { cause: error });
      throw error;
    }
  }

  /** The next block's records; null once all were read (the file is then closed). */
  next(): unknown[] | null {
    if (this.closed) return null;
    if (this.readFully(this.header, HEADER_BYTES) === 0) {
      if (this.read !== this.file.records) this.corrupt(`it ends after ${this.read} of its ${this.file.records} records`);
      this.close();
      return null;
    }
    const length = this.header.readUInt32BE(0);
    if (length < ARRAY_HEADER_BYTES || this.offset + length > this.file.bytes) this.corrupt(`a block of ${length} bytes`);
    if (this.buffer.length < length) this.buffer = Buffer.allocUnsafe(length);
    if (this.readFully(this.buffer, length) !== length) this.corrupt('it is cut short');
    const payload = this.buffer.subarray(0, length);
    if (crc32(payload) !== this.header.readUInt32BE(4)) this.corrupt('a block fails its checksum');
    let records: unknown;
    try {
      records = this.unpackr.unpack(payload);
    } catch (error) {
      this.corrupt(`a block does not unpack: ${(error as Error).message}`);
    }
    if (!Array.isArray(records) || records.length !== payload.readUInt32BE(1)) this.corrupt('a block is not an array of its records');
    this.read += records.length;
    return records;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    fs.closeSync(this.fd);
  }

  /** Reads up to `length` bytes into `target`; returns how many, 0 at the end of the file. */
  private readFully(target: Buffer, length: number): number {
    let got = 0;
    while (got < length) {
      const n = fs.readSync(this.fd, target, got, length - got, this.offset);
      if (n === 0) break;
      got += n;
      this.offset += n;
    }
    if (got !== 0 && got < length && target === this.header) this.corrupt('it is cut short');
    return got;
  }

  private corrupt(what: string): never {
    const at = this.offset;
    this.close();
    throw new SpillError('SPW_ERR_SPILL_CORRUPT', `spill file ${this.file.path} is corrupt at byte ${at}: ${what}`);
  }
}

/** Every record of a spill file, in order, a block at a time. */
export function* spilledRecords(file: SpillFile): Generator<unknown[]> {
  const reader = new SpillReader(file);
  try {
    for (let block = reader.next(); block !== null; block = reader.next()) yield block;
  } finally {
    reader.close();
  }
}

/** Removes a spill file that was read or is no longer needed. */
export function removeSpillFile(file: SpillFile): void {
  fs.rmSync(file.path, { force: true });
}

import fs from 'node:fs';
import path from 'node:path';
import { crc32 } from '@node-rs/crc32';
import { DataType, type NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import { SpillwayError } from '../../../errors/Errors.js';

/**
 * A partition's data file: buffers appended one after another, each behind a header
 * that lets a reader check what it reads back, so that a corrupt or truncated file
 * fails its reader with a message instead of giving wrong records.
 *
 * +-------------+---------------+-----------+--------------+-------------+------------+
 * | LENGTH (4)  | DATA TYPE (1) | FLAGS (1) | RESERVED (2) | CRC-32 (4)  | PAYLOAD    |
 * +-------------+---------------+-----------+--------------+-------------+------------+
 *
 * Big-endian. FLAGS bit 0: the payload is compressed (BufferCodec). CRC-32 is of the
 * payload as stored.
 */
export const BUFFER_HEADER_BYTES = 12;
const FLAG_COMPRESSED = 1;

/** Buffers written in one writev() at most. */
const MAX_WRITE_BATCH = 128;

/** A partition file that does not hold what it should. */
export class CorruptPartitionFileError extends SpillwayError {
  constructor(message: string) {
    super('SPW_ERR_CORRUPT_PARTITION_FILE', message);
    this.name = 'CorruptPartitionFileError';
  }
}

/**
 * Appends buffers to a data file, in the order given; the file is made (with its
 * folder) at the first append. Appends run one at a time; each resolves with the
 * offset of every buffer it wrote. The caller keeps its buffers until then.
 */
export class PartitionFileWriter {
  private fdOrNull: number | null = null;
  private end = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;

  constructor(readonly file: string) {}

  /** Bytes appended so far. */
  get size(): number {
    return this.end;
  }

  /** True while an append is under way. */
  get isWriting(): boolean {
    return this.pending > 0;
  }

  /** The open file, for reading it back; made empty if nothing was appended yet. */
  get fd(): number {
    if (this.fdOrNull === null) {
      fs.mkdirSync(path.dirname(this.file), { recursive: true });
      this.fdOrNull = fs.openSync(this.file, 'w+');
    }
    return this.fdOrNull;
  }

  append(buffers: readonly NetworkBuffer[]): Promise<number[]> {
    this.pending++;
    const done = this.tail.then(() => this.write(buffers));
    this.tail = done.then(
      () => void this.pending--,
      () => void this.pending--,
    );
    return done;
  }

  /** Resolves once every append so far is done (failed ones included). */
  async drained(): Promise<void> {
    await this.tail;
  }

  /** Closes the file once the appends under way are done. */
  close(): void {
    void this.tail.then(() => {
      if (this.fdOrNull === null) return;
      const fd = this.fdOrNull;
      this.fdOrNull = null;
      fs.close(fd, () => {});
    });
  }

  private async write(buffers: readonly NetworkBuffer[]): Promise<number[]> {
    const fd = this.fd;
    const offsets: number[] = [];
    for (let from = 0; from < buffers.length; from += MAX_WRITE_BATCH) {
      const batch = encodeBuffers(buffers.slice(from, from + MAX_WRITE_BATCH), this.end);
      await writeFully(fd, batch.chunks, this.end);
      this.end = batch.end;
      offsets.push(...batch.offsets);
    }
    return offsets;
  }
}

/** What writes `buffers` at `position` of a data file: header and payload of each, where each starts, and where they end. */
export function encodeBuffers(buffers: readonly NetworkBuffer[], position: number): { chunks: Buffer[]; offsets: number[]; end: number } {
  const headers = Buffer.allocUnsafe(BUFFER_HEADER_BYTES * buffers.length);
  const chunks: Buffer[] = [];
  const offsets: number[] = [];
  let end = position;
  buffers.forEach((buffer, i) => {
    const payload = buffer.bytes();
    const header = headers.subarray(i * BUFFER_HEADER_BYTES, (i + 1) * BUFFER_HEADER_BYTES);
    writeHeader(header, buffer, payload);
    chunks.push(header, payload);
    offsets.push(end);
    end += BUFFER_HEADER_BYTES + payload.length;
  });
  return { chunks, offsets, end };
}

function writeHeader(header: Buffer, buffer: NetworkBuffer, payload: Buffer): void {
  header.writeUInt32BE(payload.length, 0);
  header[4] = buffer.dataType;
  header[5] = buffer.compressed ? FLAG_COMPRESSED : 0;
  header.writeUInt16BE(0, 6);
  header.writeUInt32BE(crc32(payload), 8);
}

/**
 * Reads the buffer stored at `offset` of a data file into `target` (its segment),
 * checking its header and checksum; resolves with where the next buffer starts.
 * `describe` names the file in errors.
 */
export async function readBufferAt(fd: number, offset: number, target: NetworkBuffer, describe: string): Promise<number> {
  const header = Buffer.allocUnsafe(BUFFER_HEADER_BYTES);
  await readExactly(fd, header, BUFFER_HEADER_BYTES, offset, describe);
  const length = header.readUInt32BE(0);
  checkHeader(header, length, target, offset, describe);
  await readExactly(fd, target.segment, length, offset + BUFFER_HEADER_BYTES, describe);
  fillFrom(header, length, target, offset, describe);
  return offset + BUFFER_HEADER_BYTES + length;
}

/**
 * Reads the buffers stored one after another from `offset` of a data file, whose payload
 * lengths the writer recorded, into `targets` with one preadv (a syscall and a trip to the
 * thread pool for the run, not two for each buffer), checking each header and checksum.
 */
export async function readBuffersAt(fd: number, offset: number, targets: readonly NetworkBuffer[], lengths: readonly number[], describe: string): Promise<void> {
  const headers = Buffer.allocUnsafe(BUFFER_HEADER_BYTES * targets.length);
  const chunks: Buffer[] = [];
  targets.forEach((target, i) => chunks.push(headers.subarray(i * BUFFER_HEADER_BYTES, (i + 1) * BUFFER_HEADER_BYTES), target.segment.subarray(0, lengths[i])));
  await readvExactly(fd, chunks, offset, describe);
  let at = offset;
  targets.forEach((target, i) => {
    const header = headers.subarray(i * BUFFER_HEADER_BYTES, (i + 1) * BUFFER_HEADER_BYTES);
    if (header.readUInt32BE(0) !== lengths[i]) throw new CorruptPartitionFileError(`${describe} is corrupt: a bad buffer header at offset ${at}`);
    checkHeader(header, lengths[i], target, at, describe);
    fillFrom(header, lengths[i], target, at, describe);
    at += BUFFER_HEADER_BYTES + lengths[i];
  });
}

function checkHeader(header: Buffer, length: number, target: NetworkBuffer, offset: number, describe: string): void {
  const type = header[4];
  const flags = header[5];
  if (length > target.capacity || (type !== DataType.DATA && type !== DataType.EVENT) || (flags & ~FLAG_COMPRESSED) !== 0 || header.readUInt16BE(6) !== 0) {
    throw new CorruptPartitionFileError(`${describe} is corrupt: a bad buffer header at offset ${offset}`);
  }
}

/** Checks the payload read into `target` against its header's checksum, then gives `target` the header's size, type and flags. */
function fillFrom(header: Buffer, length: number, target: NetworkBuffer, offset: number, describe: string): void {
  if (crc32(target.segment.subarray(0, length)) !== header.readUInt32BE(8)) {
    throw new CorruptPartitionFileError(`${describe} is corrupt: the checksum of the buffer at offset ${offset} does not match`);
  }
  target.size = length;
  target.dataType = header[4];
  target.compressed = (header[5] & FLAG_COMPRESSED) !== 0;
}

/** Reads exactly `length` bytes at `position` into the start of `target`; a short file is a truncation. */
export function readExactly(fd: number, target: Buffer, length: number, position: number, describe: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const step = (done: number): void => {
      if (done === length) return resolve();
      fs.read(fd, target, done, length - done, position + done, (error, read) => {
        if (error) return reject(error);
        if (read === 0) return reject(new CorruptPartitionFileError(`${describe} is truncated: it ends at ${position + done}, inside the buffer at ${position}`));
        step(done + read);
      });
    };
    step(0);
  });
}

/** preadv() until every chunk is full: a short read goes on with what is left; the file ending first is a truncation. */
function readvExactly(fd: number, chunks: Buffer[], position: number, describe: string): Promise<void> {
  return new Promise((resolve, reject) => {
    fs.readv(fd, chunks, position, (error, read) => {
      if (error) return reject(error);
      const left = rest(chunks, read);
      if (left.length === 0) return resolve();
      if (read === 0) return reject(new CorruptPartitionFileError(`${describe} is truncated: it ends at ${position}, inside the buffers read from there`));
      readvExactly(fd, left, position + read, describe).then(resolve, reject);
    });
  });
}

/** What of `chunks` is left once `done` bytes of them are. */
function rest(chunks: readonly Buffer[], done: number): Buffer[] {
  const left: Buffer[] = [];
  for (const chunk of chunks) {
    if (done >= chunk.length) done -= chunk.length;
    else {
      left.push(chunk.subarray(done));
      done = 0;
    }
  }
  return left;
}

/** writev() until every byte is written: a short write goes on with what is left. */
export function writeFully(fd: number, chunks: Buffer[], position: number): Promise<void> {
  return new Promise((resolve, reject) => {
    fs.writev(fd, chunks, position, (error, written) => {
      if (error) return reject(error);
      const left = rest(chunks, written);
      if (left.length === 0) resolve();
      else writeFully(fd, left, position + written).then(resolve, reject);
    });
  });
}

import { Packr, REUSE_BUFFER_MODE, RESET_BUFFER_MODE, RESERVE_START_SPACE } from 'msgpackr';
import { copyBytes } from '../buffer/Bytes.js';
import type { NetworkBuffer } from '../buffer/NetworkBuffer.js';

/** Bytes of the big-endian length that precedes every record. */
export const LENGTH_BYTES = 4;
/** The largest record, after packing, that the format carries. */
export const MAX_RECORD_BYTES = 0x7fff_ffff;

// Pack into the Packr's own reused buffer, leaving room in front for the length.
const PACK_MODE = REUSE_BUFFER_MODE | RESET_BUFFER_MODE | RESERVE_START_SPACE | LENGTH_BYTES;

/** A Packr for one channel: `sequential` sends each record structure once, in-band, and only then refers to it. */
export function channelPackr(): Packr {
  return new Packr({ sequential: true });
}

/**
 * Writes records, msgpackr-packed and length-prefixed, into buffers. serialize()
 * stages one record; copyTo() moves as much of it as fits into a buffer and is
 * called again with the next buffer until the record is complete, so a record
 * may span any number of buffers.
 */
export class RecordSerializer {
  private staged: Buffer = Buffer.alloc(0);
  private start = 0;
  private position = 0;
  private end = 0;

  constructor(private readonly packr: Packr = channelPackr()) {}

  serialize(record: unknown): void {
    const target = this.packr.pack(record, PACK_MODE) as Buffer & { start: number; end: number };
    const start = target.start;
    const length = target.end - start - LENGTH_BYTES;
    if (length > MAX_RECORD_BYTES) throw new RangeError(`record of ${length} bytes exceeds ${MAX_RECORD_BYTES}`);
    target[start] = length >>> 24;
    target[start + 1] = length >>> 16;
    target[start + 2] = length >>> 8;
    target[start + 3] = length;
    this.staged = target;
    this.start = start;
    this.position = start;
    this.end = target.end;
  }

  /**
   * Moves the staged record into memory of its own. The record is staged in
   * msgpackr's buffer, which is shared by every Packr in the process and overwritten
   * by the next pack(): a record that must wait (for a buffer) has to be detached first.
   */
  detach(): void {
    this.staged = Buffer.from(this.staged.subarray(this.start, this.end));
    this.position -= this.start;
    this.end -= this.start;
    this.start = 0;
  }

  /** Stages the same record again, for the next channel of a broadcast. */
  rewind(): void {
    this.position = this.start;
  }

  /** Copies what fits of the staged record into the buffer; true when the record is complete. */
  copyTo(buffer: NetworkBuffer): boolean {
    const free = buffer.capacity - buffer.size;
    const remaining = this.end - this.position;
    const length = remaining <= free ? remaining : free;
    copyBytes(this.staged, this.position, buffer.segment, buffer.size, length);
    buffer.size += length;
    this.position += length;
    return length === remaining;
  }
}

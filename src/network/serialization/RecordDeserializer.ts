import { Unpackr } from 'msgpackr';
import { copyBytes } from '../buffer/Bytes.js';
import type { NetworkBuffer } from '../buffer/NetworkBuffer.js';
import { LENGTH_BYTES } from './RecordSerializer.js';

/** Returned by next() when the current buffer holds no further complete record. */
export const NEED_MORE: unique symbol = Symbol('NEED_MORE');

/**
 * Records up to this size are unpacked from a copy at offset 0. msgpackr decodes
 * strings in JS only when the value ends within the first 140 bytes of its source;
 * further in, it calls its native string extractor, a fixed cost (about 60 ns) that
 * pays off for records with several strings but doubles the cost of a word tuple.
 */
const SMALL_RECORD = 32;

/** The Unpackr that reads what a channelPackr() wrote, one per channel and per read of it. */
export function channelUnpackr(): Unpackr {
  // A fresh options object each time: Unpackr's constructor mutates it. copyBuffers:
  // binary values would otherwise be views into a buffer that is recycled and reused.
  return new Unpackr({ sequential: true, copyBuffers: true });
}

/**
 * Reads length-prefixed records out of a channel's buffers, in order. A record that
 * continues into the next buffer is gathered in a spanning buffer first; all other
 * records are unpacked in place, without a copy. A buffer is recycled as soon as
 * its last byte has been read.
 */
export class RecordDeserializer {
  private buffer: NetworkBuffer | null = null;
  private segment: Buffer = Buffer.alloc(0);
  private position = 0;
  private limit = 0;
  /** Bytes of a record (or of its length) that continue from an earlier buffer. */
  private spanning: Buffer | null = null;
  private spanned = 0;
  private readonly lengthBytes = Buffer.alloc(LENGTH_BYTES);
  private lengthRead = 0;
  private readonly range = { start: 0, end: 0 };
  private readonly small = Buffer.alloc(SMALL_RECORD);

  constructor(private readonly unpackr: Unpackr = channelUnpackr()) {}

  /** True while part of a record waits for the next buffer. */
  get hasPartialRecord(): boolean {
    return this.spanning !== null || this.lengthRead > 0;
  }

  setNextBuffer(buffer: NetworkBuffer): void {
    if (this.buffer !== null) throw new Error('previous buffer not fully read');
    this.buffer = buffer;
    this.segment = buffer.segment;
    this.position = 0;
    this.limit = buffer.size;
  }

  /** The next complete record, or NEED_MORE (the buffer is then recycled). */
  next(): unknown {
    if (this.buffer === null) return NEED_MORE;
    if (this.spanning !== null || this.lengthRead > 0) return this.continueSpanning();
    const segment = this.segment;
    const position = this.position;
    const available = this.limit - position;
    if (available >= LENGTH_BYTES) {
      const length =
        ((segment[position] << 24) | (segment[position + 1] << 16) | (segment[position + 2] << 8) | segment[position + 3]) >>> 0;
      const start = position + LENGTH_BYTES;
      const end = start + length;
      if (end <= this.limit) {
        this.position = end;
        const record = length <= SMALL_RECORD ? this.unpackSmall(start, length) : this.unpackInPlace(start, end);
        if (end === this.limit) this.release();
        return record;
      }
      this.beginSpanning(length, start);
      return NEED_MORE;
    }
    if (available > 0) {
      segment.copy(this.lengthBytes, 0, position, this.limit);
      this.lengthRead = available;
    }
    this.release();
    return NEED_MORE;
  }

  /** Drops the current buffer and any partial record (the channel is gone). */
  clear(): void {
    if (this.buffer !== null) this.release();
    this.spanning = null;
    this.lengthRead = 0;
  }

  private unpackInPlace(start: number, end: number): unknown {
    const range = this.range;
    range.start = start;
    range.end = end;
    return this.unpackr.unpack(this.segment, range);
  }

  private unpackSmall(start: number, length: number): unknown {
    copyBytes(this.segment, start, this.small, 0, length);
    return this.unpackr.unpack(this.small, length);
  }

  private beginSpanning(length: number, start: number): void {
    this.spanning = Buffer.allocUnsafe(length);
    this.spanned = this.segment.copy(this.spanning, 0, start, this.limit);
    this.release();
  }

  private continueSpanning(): unknown {
    if (this.spanning === null) {
      const take = Math.min(LENGTH_BYTES - this.lengthRead, this.limit - this.position);
      this.segment.copy(this.lengthBytes, this.lengthRead, this.position, this.position + take);
      this.lengthRead += take;
      this.position += take;
      if (this.lengthRead < LENGTH_BYTES) {
        this.release();
        return NEED_MORE;
      }
      this.lengthRead = 0;
      this.spanning = Buffer.allocUnsafe(this.lengthBytes.readUInt32BE(0));
      this.spanned = 0;
    }
    const spanning = this.spanning;
    const take = Math.min(spanning.length - this.spanned, this.limit - this.position);
    this.segment.copy(spanning, this.spanned, this.position, this.position + take);
    this.spanned += take;
    this.position += take;
    if (this.position === this.limit) this.release();
    if (this.spanned < spanning.length) return NEED_MORE;
    this.spanning = null;
    return this.unpackr.unpack(spanning);
  }

  private release(): void {
    const buffer = this.buffer!;
    this.buffer = null;
    this.segment = EMPTY;
    this.position = 0;
    this.limit = 0;
    buffer.recycle();
  }
}

const EMPTY = Buffer.alloc(0);

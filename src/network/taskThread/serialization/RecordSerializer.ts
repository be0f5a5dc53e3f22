import { Packr, REUSE_BUFFER_MODE, RESET_BUFFER_MODE, RESERVE_START_SPACE } from 'msgpackr';
import { SpillwayError } from '../../../errors/Errors.js';
import { copyBytes } from '../../buffer/Bytes.js';
import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import { ShapedBatchWriter } from './ShapedBatch.js';

/** Bytes of the big-endian length that precedes every batch. */
export const LENGTH_BYTES = 4;
/** Bit 31 of the length word: the batch is shaped (ShapedBatch.ts), not msgpackr's. */
export const SHAPED_BATCH = 0x8000_0000;
/** The largest batch, after packing, that the format carries (bit 30 of the length word is kept free). */
export const MAX_BATCH_BYTES = 0x3fff_ffff;

// Pack into the Packr's own reused buffer, leaving room in front for the length.
const PACK_MODE = REUSE_BUFFER_MODE | RESET_BUFFER_MODE | RESERVE_START_SPACE | LENGTH_BYTES;
// A probe only measures: into the probe's reused buffer, with no copy out of it.
const PROBE_MODE = REUSE_BUFFER_MODE | RESET_BUFFER_MODE;

/**
 * Before anything was packed the size of a record is unknown: the first record goes
 * alone, and measures it. An integer larger than any buffer, not Infinity: a field that
 * holds a float and then integers costs every new serializer's writer a deoptimization.
 */
const UNMEASURED = 1 << 29;
/**
 * Every this many records one is packed on its own to check the estimate: records
 * much larger than the last batch's would otherwise pile up into a huge batch.
 */
const PROBE_EVERY = 64;

/** A Packr for one channel: `sequential` sends each record structure once, in-band, and only then refers to it. */
export function channelPackr(): Packr {
  return new Packr({ sequential: true });
}

/**
 * Writes records into buffers as length-prefixed batches: a batch whose records share
 * a shape (the same keys or length, each field one of string, number, boolean or null)
 * in our own layout (ShapedBatch.ts), any other as one msgpackr array of records. One
 * pack() per batch instead of per record halves the cost of small records on both
 * sides (the reader unpacks a batch in one call too); a shaped batch costs half of
 * msgpackr's again.
 *
 * add() collects records and estimates the batch's packed size from the last batch,
 * so the writer can close a batch when it about fills the buffer; stage() packs the
 * batch; copyTo() moves as much of it as fits into a buffer and is called again
 * with the next buffer until the batch is complete, so a batch may span any number
 * of buffers. A record is packed only when its batch is: it must not be changed
 * after it was added.
 */
export class RecordSerializer {
  private readonly pending: unknown[] = [];
  private bytesPerRecord = UNMEASURED;
  /** Packs sample records, with structures of its own, so the channel's stream is untouched. */
  private readonly probe = channelPackr();
  private readonly shaped = new ShapedBatchWriter();
  private staged: Buffer = EMPTY;
  private detached = false;
  private start = 0;
  private position = 0;
  private end = 0;

  constructor(private readonly packr: Packr = channelPackr()) {}

  /** Adds a record to the batch; returns the batch's estimated packed size in bytes. */
  add(record: unknown): number {
    const pending = this.pending;
    const count = pending.push(record);
    if (count % PROBE_EVERY === 0) this.checkEstimate(record);
    return count * this.bytesPerRecord;
  }

  /**
   * True when the batch could not take one more record and still fit, with its
   * length, into `free` bytes. It aims a little short: the estimate comes from the
   * last batch, and a batch that overshoots spans two buffers.
   */
  isFull(free: number): boolean {
    return (this.pending.length + 1) * this.bytesPerRecord > free - (free >> 4) - LENGTH_BYTES;
  }

  /** True if records were added since the last stage(). */
  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** Packed bytes per record in the last batch (UNMEASURED, larger than any buffer, before the first). */
  get recordBytes(): number {
    return this.bytesPerRecord;
  }

  /** Packs the records added so far into one batch, length in front, for copyTo(). */
  stage(): void {
    const pending = this.pending;
    const count = pending.length;
    let target: Buffer;
    let start = 0;
    let end: number;
    let flag = SHAPED_BATCH;
    try {
      const shaped = this.shaped.write(pending, LENGTH_BYTES);
      if (shaped !== null) {
        target = shaped;
        end = shaped.length;
      } else {
        const packed = this.packr.pack(pending, PACK_MODE) as Buffer & { start: number; end: number };
        target = packed;
        start = packed.start;
        end = packed.end;
        flag = 0;
      }
    } catch (error) {
      throw new SpillwayError('SPW_ERR_UNSERIALIZABLE_RECORD', `a batch of ${count} record(s) cannot be packed: ${(error as Error).message}`, { cause: error });
    } finally {
      // Records that cannot be packed are not left behind to fail the next batch too.
      pending.length = 0;
    }
    const length = end - start - LENGTH_BYTES;
    if (length > MAX_BATCH_BYTES) throw new SpillwayError('SPW_ERR_UNSERIALIZABLE_RECORD', `a batch of ${count} record(s) packs into ${length} bytes, over ${MAX_BATCH_BYTES}`);
    this.bytesPerRecord = Math.ceil(length / count);
    const word = (length | flag) >>> 0;
    target[start] = word >>> 24;
    target[start + 1] = word >>> 16;
    target[start + 2] = word >>> 8;
    target[start + 3] = word;
    this.staged = target;
    this.detached = false;
    this.start = start;
    this.position = start;
    this.end = end;
  }

  /** Stages one record as a batch of its own. */
  serialize(record: unknown): void {
    this.add(record);
    this.stage();
  }

  /**
   * Moves the staged batch into memory of its own. The batch is staged in msgpackr's
   * buffer (or the shaped batches' scratch), which is shared by every serializer in the
   * thread and overwritten by the next stage(): a batch that must wait (for a buffer)
   * has to be detached first.
   */
  detach(): void {
    if (this.detached) return;
    this.detached = true;
    this.staged = Buffer.from(this.staged.subarray(this.start, this.end));
    this.position -= this.start;
    this.end -= this.start;
    this.start = 0;
  }

  /** Drops the records added and the batch staged (the writer was aborted). */
  discard(): void {
    this.pending.length = 0;
    this.staged = EMPTY;
    this.start = this.position = this.end = 0;
  }

  /** Copies what fits of the staged batch into the buffer; true when the batch is complete. */
  copyTo(buffer: NetworkBuffer): boolean {
    const free = buffer.capacity - buffer.size;
    const remaining = this.end - this.position;
    const length = remaining <= free ? remaining : free;
    copyBytes(this.staged, this.position, buffer.segment, buffer.size, length);
    buffer.size += length;
    this.position += length;
    return length === remaining;
  }

  private checkEstimate(record: unknown): void {
    let bytes: number;
    try {
      const packed = this.probe.pack(record, PROBE_MODE) as Buffer & { start: number; end: number };
      bytes = packed.end - packed.start;
    } catch {
      return; // stage() reports a record that cannot be packed, as the writer's failure
    }
    if (bytes > 2 * this.bytesPerRecord) this.bytesPerRecord = bytes;
  }
}

const EMPTY = Buffer.alloc(0);

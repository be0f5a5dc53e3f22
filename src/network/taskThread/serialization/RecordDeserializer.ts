import { Unpackr } from 'msgpackr';
import { decompress } from '../../buffer/BufferCodec.js';
import { copyBytes } from '../../buffer/Bytes.js';
import { DataType, NetworkBuffer, UNPOOLED, unpooledBuffer } from '../../buffer/NetworkBuffer.js';
import { LENGTH_BYTES, MAX_BATCH_BYTES, SHAPED_BATCH } from './RecordSerializer.js';
import { readShapedBatch } from './ShapedBatch.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** Returned by next() when the current buffer holds no further complete record. */
export const NEED_MORE: unique symbol = Symbol('NEED_MORE');

/** The Unpackr that reads what a channelPackr() wrote, one per channel and per read of it. */
export function channelUnpackr(): Unpackr {
  // A fresh options object each time: Unpackr's constructor mutates it. copyBuffers:
  // binary values would otherwise be views into a buffer that is recycled and reused.
  return new Unpackr({ sequential: true, copyBuffers: true });
}

const NO_RECORDS: readonly unknown[] = [];

/**
 * A channel's reader as an unaligned checkpoint stores it (InFlightData.ts): the record
 * structures its stream defined so far, which later batches refer to, and the bytes of
 * a batch it has begun, from its length on.
 */
export interface ReaderState {
  structures: (string[] | null)[];
  partial: Uint8Array;
}

/**
 * Reads the length-prefixed batches of records (RecordSerializer), shaped or msgpackr's, out of a channel's
 * buffers, in order, and hands out their records one by one. A batch that continues
 * into the next buffer is gathered in a spanning buffer first; all other batches are
 * unpacked in place, without a copy. A buffer is recycled as soon as its last batch
 * has been unpacked: records never point into it.
 */
export class RecordDeserializer {
  private buffer: NetworkBuffer | null = null;
  private segment: Buffer = EMPTY;
  private position = 0;
  private limit = 0;
  /** The records of the last batch unpacked, handed out from `index` on. */
  private records: readonly unknown[] = NO_RECORDS;
  private index = 0;
  /** Bytes of a batch (or of its length) that continue from an earlier buffer. */
  private spanning: Buffer | null = null;
  private spanningShaped = false;
  private spanned = 0;
  private readonly lengthBytes = Buffer.alloc(LENGTH_BYTES);
  private lengthRead = 0;
  private readonly range = { start: 0, end: 0 };
  /** Where a buffer of shared memory is copied for msgpackr to read. */
  private scratch: Buffer = EMPTY;
  /** The current buffer is in shared memory (a local channel's, or the network thread's). */
  private shared = false;

  constructor(private readonly unpackr: Unpackr = channelUnpackr()) {}

  /** A reader that goes on where `state` was taken: its structures learnt, its begun batch waiting for the rest. */
  static restored(state: ReaderState): RecordDeserializer {
    const structures = state.structures.map((keys) => keys ?? undefined);
    const reader = new RecordDeserializer(new Unpackr({ sequential: true, copyBuffers: true, structures: structures as object[] }));
    if (state.partial.length > 0) {
      reader.setNextBuffer(unpooledBuffer(Buffer.from(state.partial), DataType.DATA));
      if (reader.next() !== NEED_MORE) throw new SpillwayError('SPW_ERR_CHECKPOINT_CORRUPT', 'a stored partial batch holds a whole record');
    }
    return reader;
  }

  /** This reader between buffers, for an unaligned checkpoint. */
  state(): ReaderState {
    const structures = Array.from((this.unpackr as Unpackr & { structures?: unknown[] }).structures ?? [], (keys) => (Array.isArray(keys) ? (keys as unknown[]).map(String) : null));
    let partial: Buffer;
    if (this.spanning !== null) {
      partial = Buffer.allocUnsafe(LENGTH_BYTES + this.spanned);
      partial.writeUInt32BE((this.spanning.length | (this.spanningShaped ? SHAPED_BATCH : 0)) >>> 0, 0);
      this.spanning.copy(partial, LENGTH_BYTES, 0, this.spanned);
    } else partial = Buffer.from(this.lengthBytes.subarray(0, this.lengthRead));
    return { structures, partial };
  }

  /** True while part of a batch waits for the next buffer. */
  get hasPartialRecord(): boolean {
    return this.spanning !== null || this.lengthRead > 0;
  }

  setNextBuffer(buffer: NetworkBuffer): void {
    if (this.buffer !== null || this.index < this.records.length) throw new SpillwayError('SPW_ERR_INTERNAL', 'previous buffer not fully read');
    // Decompressing copies out of shared memory too.
    if (buffer.compressed) buffer = decompress(buffer, buffer.capacity);
    this.shared = buffer.segment.buffer instanceof SharedArrayBuffer;
    this.buffer = buffer;
    this.segment = buffer.segment;
    this.position = 0;
    this.limit = buffer.size;
  }

  /** The next complete record, or NEED_MORE (the buffer has then been recycled). */
  next(): unknown {
    const records = this.records;
    if (this.index < records.length) return records[this.index++];
    while (this.buffer !== null) {
      const batch = this.spanning !== null || this.lengthRead > 0 ? this.continueSpanning() : this.nextBatch();
      if (batch !== null && batch.length > 0) {
        this.records = batch;
        this.index = 1;
        return batch[0];
      }
    }
    this.records = NO_RECORDS;
    this.index = 0;
    return NEED_MORE;
  }

  /**
   * msgpackr reads strings out of shared memory at about half its speed: one copy of
   * the buffer into memory of this thread costs less, and the buffer goes back to its
   * pool (and its sender's credit) at once. Records never point into the copy. Shaped
   * batches read shared memory as fast as their own, so a buffer is copied only when a
   * msgpackr batch comes in it.
   */
  private copyOutOfSharedMemory(): void {
    const buffer = this.buffer!;
    const size = buffer.size;
    if (this.scratch.length < size) this.scratch = Buffer.allocUnsafeSlow(buffer.capacity);
    copyBytes(buffer.segment, 0, this.scratch, 0, size);
    buffer.recycle();
    const copy = new NetworkBuffer(this.scratch, UNPOOLED, buffer.dataType);
    copy.size = size;
    this.buffer = copy;
    this.segment = this.scratch;
    this.shared = false;
  }

  /** Drops the current buffer and any partial batch (the channel is gone). */
  clear(): void {
    if (this.buffer !== null) this.release();
    this.spanning = null;
    this.lengthRead = 0;
    this.records = NO_RECORDS;
    this.index = 0;
  }

  /** Unpacks the batch at the current position if it is complete here; null otherwise. */
  private nextBatch(): readonly unknown[] | null {
    const segment = this.segment;
    const position = this.position;
    const available = this.limit - position;
    if (available >= LENGTH_BYTES) {
      const word = ((segment[position] << 24) | (segment[position + 1] << 16) | (segment[position + 2] << 8) | segment[position + 3]) >>> 0;
      const shaped = word >= SHAPED_BATCH;
      const length = checkedLength(word & ~SHAPED_BATCH);
      const start = position + LENGTH_BYTES;
      const end = start + length;
      if (end <= this.limit) {
        this.position = end;
        if (!shaped && this.shared) this.copyOutOfSharedMemory();
        const batch = shaped ? readShapedBatch(segment, start, end) : this.unpack(this.segment, start, end);
        if (end === this.limit) this.release();
        return batch;
      }
      this.beginSpanning(length, shaped, start);
      return null;
    }
    if (available > 0) {
      segment.copy(this.lengthBytes, 0, position, this.limit);
      this.lengthRead = available;
    }
    this.release();
    return null;
  }

  private unpack(segment: Buffer, start: number, end: number): readonly unknown[] {
    const range = this.range;
    range.start = start;
    range.end = end;
    return asBatch(this.unpackr.unpack(segment, range));
  }

  private beginSpanning(length: number, shaped: boolean, start: number): void {
    this.spanning = Buffer.allocUnsafe(length);
    this.spanningShaped = shaped;
    this.spanned = this.segment.copy(this.spanning, 0, start, this.limit);
    this.release();
  }

  /** Gathers more of a spanning batch (or of its length); the batch once it is complete. */
  private continueSpanning(): readonly unknown[] | null {
    if (this.spanning === null) {
      const take = Math.min(LENGTH_BYTES - this.lengthRead, this.limit - this.position);
      this.segment.copy(this.lengthBytes, this.lengthRead, this.position, this.position + take);
      this.lengthRead += take;
      this.position += take;
      if (this.lengthRead < LENGTH_BYTES) {
        this.release();
        return null;
      }
      this.lengthRead = 0;
      const word = this.lengthBytes.readUInt32BE(0);
      this.spanning = Buffer.allocUnsafe(checkedLength(word & ~SHAPED_BATCH));
      this.spanningShaped = word >= SHAPED_BATCH;
      this.spanned = 0;
    }
    const spanning = this.spanning;
    const take = Math.min(spanning.length - this.spanned, this.limit - this.position);
    this.segment.copy(spanning, this.spanned, this.position, this.position + take);
    this.spanned += take;
    this.position += take;
    if (this.position === this.limit) this.release();
    if (this.spanned < spanning.length) return null;
    this.spanning = null;
    return this.spanningShaped ? readShapedBatch(spanning, 0, spanning.length) : asBatch(this.unpackr.unpack(spanning));
  }

  private release(): void {
    const buffer = this.buffer!;
    this.buffer = null;
    this.segment = EMPTY;
    this.shared = false;
    this.position = 0;
    this.limit = 0;
    buffer.recycle();
  }
}

const EMPTY = Buffer.alloc(0);

/** A batch length no serializer writes is a corrupt stream, refused before anything is allocated for it. */
function checkedLength(length: number): number {
  if (length > MAX_BATCH_BYTES) throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', `corrupt record stream: a batch of ${length} bytes, over ${MAX_BATCH_BYTES}`);
  return length;
}

function asBatch(value: unknown): readonly unknown[] {
  if (!Array.isArray(value)) throw new SpillwayError('SPW_ERR_CORRUPT_FRAME', 'corrupt record stream: a batch is not an array of records');
  return value;
}

import { SpillwayError } from '../../errors/Errors.js';
/** What a buffer carries: serialized records, or one in-band event. */
export const enum DataType {
  DATA = 0,
  EVENT = 1,
}

/** Takes a segment back once the last reference to its buffer is recycled. */
export interface BufferRecycler {
  recycle(segment: Buffer): void;
}

/**
 * A fixed-size memory segment with a fill level: the unit that is written, queued,
 * sent and recycled. Reference counted so that a blocking partition can hand the
 * same bytes to several readers; every holder recycles its reference exactly once.
 */
export class NetworkBuffer {
  /** Number of valid bytes from the start of the segment. */
  size = 0;
  /** The bytes are a compressed block of records (BufferCodec); set by whoever compressed them. */
  compressed = false;
  private refs = 1;

  constructor(
    readonly segment: Buffer,
    private readonly recycler: BufferRecycler,
    public dataType: DataType = DataType.DATA,
  ) {}

  get capacity(): number {
    return this.segment.length;
  }

  get isEvent(): boolean {
    return this.dataType === DataType.EVENT;
  }

  get isRecycled(): boolean {
    return this.refs === 0;
  }

  /** The valid bytes, without copying. */
  bytes(): Buffer {
    return this.segment.subarray(0, this.size);
  }

  /** Adds a reference; the buffer returns to its pool after one more recycle(). */
  retain(): this {
    if (this.refs === 0) throw new SpillwayError('SPW_ERR_INTERNAL', 'retain() of a recycled buffer');
    this.refs++;
    return this;
  }

  recycle(): void {
    if (this.refs === 0) throw new SpillwayError('SPW_ERR_INTERNAL', 'buffer recycled twice');
    if (--this.refs === 0) this.recycler.recycle(this.segment);
  }
}

/** For buffers that belong to no pool (events, spanning records read back): garbage collected. */
export const UNPOOLED: BufferRecycler = { recycle: () => {} };

/** Wraps bytes that belong to no pool, such as an event, as a full buffer. */
export function unpooledBuffer(bytes: Buffer, dataType: DataType): NetworkBuffer {
  const buffer = new NetworkBuffer(bytes, UNPOOLED, dataType);
  buffer.size = bytes.length;
  return buffer;
}

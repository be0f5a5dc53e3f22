import type { BufferPool } from './BufferPool.js';

export const MIN_SEGMENT_SIZE = 4 * 1024;
export const MAX_SEGMENT_SIZE = 1024 * 1024;
export const DEFAULT_SEGMENT_SIZE = 32 * 1024;

export interface NetworkBufferPoolOptions {
  /** Total network memory in bytes; divided into segments of segmentSize. */
  totalBytes: number;
  segmentSize?: number;
}

/**
 * A TaskManager's fixed network memory. Segments are allocated on first use and
 * never beyond the total; BufferPools reserve their minimum here and borrow up to
 * their maximum while segments are free.
 */
export class NetworkBufferPool {
  readonly segmentSize: number;
  readonly totalSegments: number;
  private readonly free: Buffer[] = [];
  private allocated = 0;
  private reserved = 0;
  /** Segments held by pools beyond their minimum. */
  private borrowed = 0;
  /** Pools that wait for a segment to borrow, first come first served. */
  private readonly waiting = new Set<BufferPool>();

  constructor(options: NetworkBufferPoolOptions) {
    this.segmentSize = options.segmentSize ?? DEFAULT_SEGMENT_SIZE;
    if (
      !Number.isInteger(this.segmentSize) ||
      this.segmentSize < MIN_SEGMENT_SIZE ||
      this.segmentSize > MAX_SEGMENT_SIZE
    ) {
      throw new RangeError(
        `buffer size ${this.segmentSize} is outside ${MIN_SEGMENT_SIZE}..${MAX_SEGMENT_SIZE} bytes`,
      );
    }
    this.totalSegments = Math.floor(options.totalBytes / this.segmentSize);
    if (this.totalSegments < 1) {
      throw new RangeError(`network memory ${options.totalBytes} holds no ${this.segmentSize}-byte buffer`);
    }
  }

  /** Segments held by pools or in flight (not free here). */
  get segmentsInUse(): number {
    return this.allocated - this.free.length;
  }

  /** Segments not promised to any pool's minimum. */
  get unreservedSegments(): number {
    return this.totalSegments - this.reserved;
  }

  /** Reserves a pool's guaranteed minimum; fails if the memory is promised elsewhere. */
  reserve(count: number): void {
    if (count > this.unreservedSegments) {
      throw new Error(
        `insufficient network memory: ${count} buffers requested, ${this.unreservedSegments} of ${this.totalSegments} unreserved`,
      );
    }
    this.reserved += count;
  }

  /** Gives up reserved memory; pools waiting to borrow may now have it. */
  unreserve(count: number): void {
    this.reserved -= count;
    for (const pool of this.waiting) this.serve(pool);
  }

  /**
   * A segment for a pool, or null. Within its minimum a pool always gets one (the
   * minimum is reserved); above it only while unreserved memory is left, so that
   * borrowing never eats into another pool's guarantee.
   */
  take(aboveMin: boolean): Buffer | null {
    if (this.free.length === 0 && this.allocated >= this.totalSegments) return null;
    if (!this.claim(aboveMin)) return null;
    return this.free.pop() ?? this.allocate();
  }

  /** Accounts for a segment a pool takes; false if borrowing it would break a guarantee. */
  claim(aboveMin: boolean): boolean {
    if (!aboveMin) return true;
    if (this.borrowed >= this.unreservedSegments) return false;
    this.borrowed++;
    return true;
  }

  /** Takes a segment back and offers it to a pool that waits for one. */
  give(segment: Buffer, aboveMin: boolean): void {
    if (aboveMin) this.borrowed--;
    for (const pool of this.waiting) if (pool.offer(segment)) return;
    this.free.push(segment);
  }

  /** Lets this pool know, through offer(), when a segment comes back. */
  awaitSegment(pool: BufferPool): void {
    this.waiting.add(pool);
  }

  cancelAwait(pool: BufferPool): void {
    this.waiting.delete(pool);
  }

  /** Offers a waiting pool free segments until it has enough or takes no more. */
  private serve(pool: BufferPool): void {
    while (this.waiting.has(pool)) {
      const segment = this.free.pop() ?? (this.allocated < this.totalSegments ? this.allocate() : null);
      if (segment === null) return;
      if (!pool.offer(segment)) {
        this.free.push(segment);
        return;
      }
    }
  }

  private allocate(): Buffer {
    this.allocated++;
    return Buffer.allocUnsafeSlow(this.segmentSize);
  }
}

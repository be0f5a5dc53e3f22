import type { BufferPool } from './BufferPool.js';
import { SpillwayError } from '../../errors/Errors.js';

export const MIN_SEGMENT_SIZE = 4 * 1024;
export const MAX_SEGMENT_SIZE = 1024 * 1024;
export const DEFAULT_SEGMENT_SIZE = 32 * 1024;

export interface NetworkBufferPoolOptions {
  /** Total network memory in bytes; divided into segments of segmentSize. */
  totalBytes: number;
  segmentSize?: number;
}

/**
 * The network memory as threads see it: one SharedArrayBuffer cut into segments,
 * so that a segment changes threads by its index and is never copied.
 */
export interface SharedSegments {
  memory: SharedArrayBuffer;
  segmentSize: number;
}

/** Maps segment indexes to views of shared network memory, and back; one per thread. */
export class SegmentArena {
  private readonly views: (Buffer | undefined)[] = [];

  constructor(readonly shared: SharedSegments) {}

  get segmentSize(): number {
    return this.shared.segmentSize;
  }

  segment(index: number): Buffer {
    let view = this.views[index];
    if (view === undefined) {
      view = Buffer.from(this.shared.memory, index * this.shared.segmentSize, this.shared.segmentSize);
      this.views[index] = view;
    }
    return view;
  }

  /** The index of a segment of this memory, or -1 for bytes that live elsewhere. */
  indexOf(segment: Buffer): number {
    if (segment.buffer !== this.shared.memory) return -1;
    return segment.byteOffset / this.shared.segmentSize;
  }
}

/**
 * A TaskManager's fixed network memory, shared with its task threads. BufferPools
 * reserve their minimum here. Memory beyond all minimums is divided among the pools
 * in proportion to what each may take beyond its minimum (Flink's NetworkBufferPool
 * redistribution): each pool's limit is set anew whenever a pool comes or goes, and
 * a pool above its new limit gives segments back as they are recycled.
 */
export class NetworkBufferPool {
  readonly segmentSize: number;
  readonly totalSegments: number;
  readonly arena: SegmentArena;
  private readonly free: Buffer[] = [];
  private allocated = 0;
  private reserved = 0;
  /** Segments held by pools beyond their minimum. */
  private borrowed = 0;
  private readonly pools = new Set<BufferPool>();
  /** Pools that wait for a segment to borrow, first come first served (below their minimum first). */
  private readonly waiting = new Set<BufferPool>();

  constructor(options: NetworkBufferPoolOptions) {
    this.segmentSize = options.segmentSize ?? DEFAULT_SEGMENT_SIZE;
    if (
      !Number.isInteger(this.segmentSize) ||
      this.segmentSize < MIN_SEGMENT_SIZE ||
      this.segmentSize > MAX_SEGMENT_SIZE
    ) {
      throw new SpillwayError(
        'SPW_ERR_CONFIG',
        `buffer size ${this.segmentSize} is outside ${MIN_SEGMENT_SIZE}..${MAX_SEGMENT_SIZE} bytes`,
      );
    }
    this.totalSegments = Math.floor(options.totalBytes / this.segmentSize);
    if (this.totalSegments < 1) {
      throw new SpillwayError('SPW_ERR_CONFIG', `network memory ${options.totalBytes} holds no ${this.segmentSize}-byte buffer`);
    }
    // Pages of shared memory are committed when first written: untouched segments cost no RSS.
    this.arena = new SegmentArena({ memory: new SharedArrayBuffer(this.totalSegments * this.segmentSize), segmentSize: this.segmentSize });
  }

  /** Segments held by pools or in flight (not free here). */
  get segmentsInUse(): number {
    return this.allocated - this.free.length;
  }

  /** Segments not promised to any pool's minimum. */
  get unreservedSegments(): number {
    return this.totalSegments - this.reserved;
  }

  /**
   * Adds a pool and reserves its guaranteed minimum. Fails, naming the setting to
   * raise, if that memory is promised elsewhere (Flink: "Insufficient number of
   * network buffers").
   */
  register(pool: BufferPool): void {
    this.reserve(pool.min, pool.name);
    this.pools.add(pool);
    this.redistribute();
  }

  /** Removes a destroyed pool; what it may take beyond its minimum goes to the others. */
  unregister(pool: BufferPool): void {
    this.pools.delete(pool);
    this.waiting.delete(pool);
    this.redistribute();
  }

  /** A pool lowered its bounds, giving up this much of its reserved minimum. */
  resized(unreserved: number): void {
    this.reserved -= unreserved;
    this.redistribute();
  }

  /** Reserves memory for a minimum; fails if it is promised elsewhere. */
  reserve(count: number, what = 'a buffer pool'): void {
    if (count > this.unreservedSegments) {
      throw new SpillwayError('SPW_ERR_INSUFFICIENT_NETWORK_MEMORY', 
        `insufficient network memory: ${what} needs ${count} buffers, ${this.unreservedSegments} of ${this.totalSegments} ` +
          `(${this.segmentSize} bytes each) are not reserved; raise the TaskManager's --memory or lower its --slots or the parallelism`,
      );
    }
    this.reserved += count;
  }

  /** Gives up reserved memory; pools waiting to borrow may now have it. */
  unreserve(count: number): void {
    this.reserved -= count;
    this.redistribute();
  }

  /**
   * A segment for a pool, or null. Within its minimum a pool always gets one (the
   * minimum is reserved) once segments borrowed by others come back; above it only
   * while unreserved memory is left, so that borrowing never eats into another
   * pool's guarantee.
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

  /** Takes a segment back and offers it to a pool that waits for one, a pool below its minimum first. */
  give(segment: Buffer, aboveMin: boolean): void {
    if (aboveMin) this.borrowed--;
    for (const pool of this.waiting) if (pool.buffersOwned < pool.min && pool.offer(segment)) return;
    for (const pool of this.waiting) if (pool.offer(segment)) return;
    this.free.push(segment);
  }

  /** A pool waits for its guaranteed minimum: pools above their limit are asked to recycle what they keep idle. */
  reclaimFor(waiting: BufferPool): void {
    for (const pool of this.pools) if (pool !== waiting && pool.buffersOwned > pool.limit) pool.onOverLimit?.();
  }

  /** Lets this pool know, through offer(), when a segment comes back. */
  awaitSegment(pool: BufferPool): void {
    this.waiting.add(pool);
  }

  cancelAwait(pool: BufferPool): void {
    this.waiting.delete(pool);
  }

  /**
   * Sets every pool's limit: its minimum plus a share of the memory no minimum holds,
   * in proportion to what it may take beyond its minimum; what rounding leaves goes
   * one segment at a time to the oldest pools with room. The limits never add up to
   * more than the memory, so every pool can reach its limit at once.
   */
  private redistribute(): void {
    const excess = this.totalSegments - this.reserved;
    let capacity = 0;
    for (const pool of this.pools) capacity += pool.max - pool.min;
    let left = excess;
    for (const pool of this.pools) {
      const room = pool.max - pool.min;
      const share = capacity === 0 ? 0 : Math.min(room, Math.floor((excess * room) / capacity));
      pool.limit = pool.min + share;
      left -= share;
    }
    for (const pool of this.pools) {
      if (left <= 0) break;
      if (pool.limit < pool.max) {
        pool.limit++;
        left--;
      }
    }
    this.serveWaiting();
  }

  private serveWaiting(): void {
    for (const pool of this.waiting) this.serve(pool);
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
    return this.arena.segment(this.allocated++);
  }
}

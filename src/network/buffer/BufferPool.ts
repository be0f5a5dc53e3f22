import { NetworkBuffer, type BufferRecycler } from './NetworkBuffer.js';
import type { NetworkBufferPool } from './NetworkBufferPool.js';
import { SpillwayError } from '../../errors/Errors.js';

type Waiter = { resolve: (buffer: NetworkBuffer) => void; reject: (error: Error) => void };

/**
 * A bounded pool carved from the NetworkBufferPool for one partition or input gate:
 * it holds at least `min` buffers (reserved up front) and at most its `limit`, the
 * share of network memory the global pool gives it (never above `max`). A request on
 * an exhausted pool waits until a buffer is recycled: that wait is backpressure.
 */
export class BufferPool implements BufferRecycler {
  private readonly available: Buffer[] = [];
  private readonly waiters: Waiter[] = [];
  /** Segments this pool holds: available plus handed out. */
  private owned = 0;
  private destroyed = false;
  /** The most segments this pool may hold now; set by the global pool as pools come and go. */
  limit: number;
  /**
   * Called when the pool holds more than its limit while another pool waits for its
   * minimum: whoever keeps buffers of this pool idle (a task thread's spare ones)
   * should recycle them.
   */
  onOverLimit: (() => void) | null = null;

  constructor(
    private readonly global: NetworkBufferPool,
    public min: number,
    public max: number,
    readonly name = 'buffer pool',
  ) {
    if (!(min >= 0 && max >= Math.max(1, min))) {
      throw new SpillwayError('SPW_ERR_INTERNAL', `${name}: bad bounds min=${min} max=${max}`);
    }
    this.limit = max;
    global.register(this);
  }

  get segmentSize(): number {
    return this.global.segmentSize;
  }

  /** Buffers handed out and not yet recycled. */
  get buffersInUse(): number {
    return this.owned - this.available.length;
  }

  /** Segments the pool holds, available or handed out. */
  get buffersOwned(): number {
    return this.owned;
  }

  get isDestroyed(): boolean {
    return this.destroyed;
  }

  /** A buffer now, or null when the pool is exhausted. */
  requestBuffer(): NetworkBuffer | null {
    if (this.destroyed) throw new SpillwayError('SPW_ERR_PARTITION_RELEASED', `${this.name} is destroyed`);
    const segment = this.available.pop() ?? this.borrow();
    return segment ? new NetworkBuffer(segment, this) : null;
  }

  /** A buffer, waiting for one to be recycled when the pool is exhausted. */
  requestBufferAsync(): Promise<NetworkBuffer> {
    const buffer = this.requestBuffer();
    if (buffer) return Promise.resolve(buffer);
    return new Promise((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      // Below max, a segment may come from the global pool, now or once this pool's share grows.
      if (this.owned < this.max) this.global.awaitSegment(this);
      // The minimum is guaranteed: pools above their share must give theirs back.
      if (this.owned < this.min) this.global.reclaimFor(this);
    });
  }

  /**
   * Takes a recycled segment back: above the limit to the global pool, then to a
   * waiter, then above-minimum memory to the global pool.
   */
  recycle(segment: Buffer): void {
    if (this.destroyed || this.owned > this.limit) {
      this.returnToGlobal(segment);
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) {
      if (this.waiters.length === 0) this.global.cancelAwait(this);
      waiter.resolve(new NetworkBuffer(segment, this));
    } else if (this.owned > this.min) this.returnToGlobal(segment);
    else this.available.push(segment);
  }

  /** Called by the global pool with a returned segment; true if this pool took it. */
  offer(segment: Buffer): boolean {
    if (this.destroyed || this.waiters.length === 0 || this.owned >= this.limit) return false;
    if (!this.global.claim(this.owned >= this.min)) return false;
    this.owned++;
    this.waiters.shift()!.resolve(new NetworkBuffer(segment, this));
    if (this.waiters.length === 0 || this.owned >= this.max) this.global.cancelAwait(this);
    return true;
  }

  /**
   * Lowers the bounds of a pool that holds no segment yet, for example a gate's pool
   * reserved for every channel at deployment once it is known how many are remote.
   */
  shrink(min: number, max: number): void {
    if (this.owned > 0 || min > this.min || max < Math.max(1, min)) {
      throw new SpillwayError('SPW_ERR_INTERNAL', `${this.name}: cannot shrink from min=${this.min} max=${this.max} (holding ${this.owned}) to min=${min} max=${max}`);
    }
    const released = this.min - min;
    this.min = min;
    this.max = max;
    this.global.resized(released);
  }

  /**
   * Returns the pool's memory. Buffers still out return to the global pool when
   * recycled; those within the minimum stay reserved until then, so that the
   * memory is never promised twice.
   */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.global.cancelAwait(this);
    const error = new SpillwayError('SPW_ERR_PARTITION_RELEASED', `${this.name} was destroyed while waiting for a buffer`);
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    // The part of the minimum never taken goes now, the rest with each segment's return.
    this.global.unreserve(this.min - Math.min(this.min, this.owned));
    for (const segment of this.available.splice(0)) this.returnToGlobal(segment);
    this.global.unregister(this);
  }

  private borrow(): Buffer | null {
    if (this.owned >= this.limit) return null;
    const segment = this.global.take(this.owned >= this.min);
    if (segment) this.owned++;
    return segment;
  }

  private returnToGlobal(segment: Buffer): void {
    this.owned--;
    const aboveMin = this.owned >= this.min;
    // A destroyed pool's segments within the minimum stay reserved until they are back.
    if (this.destroyed && !aboveMin) this.global.unreserve(1);
    this.global.give(segment, aboveMin);
  }
}

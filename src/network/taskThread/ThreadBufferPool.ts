import { NetworkBuffer, type BufferRecycler } from '../buffer/NetworkBuffer.js';
import type { SegmentArena } from '../buffer/NetworkBufferPool.js';
import type { WriterBufferPool } from '../ResultPartitionWriter.js';
import { Op, type HandoverPort } from '../handover/Handover.js';
import { SpillwayError } from '../../errors/Errors.js';

/** Buffers asked for at once, and the level of spare ones below which more are asked for. */
const GRANT_BATCH = 16;
const LOW_WATER = 4;

/**
 * A task thread's share of a partition's pool, which lives in the network thread:
 * segments granted in batches ahead of need, so that a writer rarely waits for an
 * answer. With none spare, a request waits for a grant, which comes only as the
 * pool gets buffers back: backpressure, as in the pool itself.
 */
export class ThreadBufferPool implements WriterBufferPool, BufferRecycler {
  private readonly spare: Buffer[] = [];
  private readonly waiters: { resolve: (buffer: NetworkBuffer) => void; reject: (error: Error) => void }[] = [];
  /** Granted segments not handed back: spare, or in the writer's hands. */
  private held = 0;
  /** Buffers of the pool in use outside this thread, as of the last grant. */
  private outside = 0;
  /** Buffers asked for and not yet granted. */
  private asked = 0;
  private released = false;

  constructor(
    private readonly port: HandoverPort,
    private readonly partition: number,
    private readonly arena: SegmentArena,
  ) {}

  get segmentSize(): number {
    return this.arena.segmentSize;
  }

  get buffersInUse(): number {
    return this.held - this.spare.length + this.outside;
  }

  requestBuffer(): NetworkBuffer | null {
    if (this.released) throw new SpillwayError('SPW_ERR_PARTITION_RELEASED', `the pool of partition ${this.partition} of this task is released`);
    if (this.spare.length <= LOW_WATER) this.ask();
    const segment = this.spare.pop();
    return segment === undefined ? null : new NetworkBuffer(segment, this);
  }

  requestBufferAsync(): Promise<NetworkBuffer> {
    const buffer = this.requestBuffer();
    if (buffer !== null) return Promise.resolve(buffer);
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** A buffer the writer did not hand over (an abort) is spare again. */
  recycle(segment: Buffer): void {
    if (this.released) {
      this.giveBack(segment);
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(new NetworkBuffer(segment, this));
    else this.spare.push(segment);
  }

  /** The network thread granted a segment. */
  granted(segment: number, outside: number): void {
    this.held++;
    this.asked--;
    this.outside = outside;
    this.recycle(this.arena.segment(segment));
  }

  /** A filled buffer passed to the network thread. */
  handedOver(buffer: NetworkBuffer): number {
    this.held--;
    return this.arena.indexOf(buffer.segment);
  }

  /** The pool needs its idle buffers back: spare ones go, and the next request asks anew. */
  giveBackSpare(): void {
    for (const segment of this.spare.splice(0)) this.giveBack(segment);
  }

  /** The partition is done with: spare segments go back, so will any granted later, and waits fail with the cause. */
  release(cause: Error): void {
    if (this.released) return;
    this.released = true;
    for (const segment of this.spare.splice(0)) this.giveBack(segment);
    for (const waiter of this.waiters.splice(0)) waiter.reject(cause);
  }

  private giveBack(segment: Buffer): void {
    this.held--;
    this.port.add([Op.UNUSED, this.partition, this.arena.indexOf(segment)]);
  }

  private ask(): void {
    if (this.asked > 0 || this.released) return;
    this.asked = GRANT_BATCH;
    this.port.add([Op.WANT, this.partition, GRANT_BATCH]);
  }
}

import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import type { ResultSubpartitionView } from '../partition/ResultSubpartition.js';
import { networkCounters } from '../NetworkCounters.js';

/**
 * The server side of one partition request: a subpartition view and the credit
 * its receiver granted. A data buffer leaves only against a credit; an event needs
 * none (the receiver holds no buffer for it). With no credit left, the next data
 * buffer is held here until credit comes, so at most one buffer waits outside the
 * subpartition's queue. An unaligned checkpoint barrier waits behind that one buffer
 * too: it belongs before the barrier, and its consumer stores it when the barrier
 * overtakes it there (the subpartition's queue stores what the barrier overtook in it).
 */
export class SubpartitionReader {
  /** In the connection's queue of readers that may send. */
  queued = false;
  private next: NetworkBuffer | null = null;
  /** The view announced data since it last had none. */
  private mayHaveData = false;
  private sequence = 0;
  private view: ResultSubpartitionView | null = null;
  /** When the held buffer started to wait for credit (performance.now()), or -1. */
  private waitingSince = -1;

  constructor(
    readonly receiverId: number,
    private credit: number,
  ) {}

  attach(view: ResultSubpartitionView): void {
    this.view = view;
  }

  /** The view's listener fired. */
  onDataAvailable(): void {
    this.mayHaveData = true;
  }

  addCredit(credit: number): void {
    this.credit += credit;
    if (this.waitingSince >= 0) {
      networkCounters.creditWaitMs += performance.now() - this.waitingSince;
      this.waitingSince = -1;
    }
  }

  /** True if a poll may give a buffer to send now. */
  get isSendable(): boolean {
    if (this.next !== null) return this.next.isEvent || this.credit > 0;
    return this.mayHaveData && this.view !== null;
  }

  /** The next buffer to send now, or null. Throws if the subpartition failed. */
  pollSendable(): NetworkBuffer | null {
    let buffer = this.next;
    if (buffer === null) {
      buffer = this.view === null ? null : this.view.pollNext();
      if (buffer === null) {
        this.mayHaveData = false;
        return null;
      }
    }
    if (!buffer.isEvent) {
      if (this.credit === 0) {
        if (this.next === null) this.waitingSince = performance.now();
        this.next = buffer;
        return null;
      }
      this.credit--;
    }
    this.next = null;
    return buffer;
  }

  /** The sequence number of the buffer about to be sent. */
  nextSequence(): number {
    const sequence = this.sequence;
    this.sequence = (sequence + 1) >>> 0;
    return sequence;
  }

  /** Data buffers queued behind the one just polled. */
  get backlog(): number {
    return this.view === null ? 0 : this.view.backlog;
  }

  /** Drops the held buffer and the view; a pipelined subpartition not read to its end drops its queue. */
  release(): void {
    this.next?.recycle();
    this.next = null;
    this.view?.release();
    this.view = null;
  }
}

import { DataType, NetworkBuffer, unpooledBuffer, type BufferRecycler } from '../../buffer/NetworkBuffer.js';
import type { BufferPool } from '../../buffer/BufferPool.js';
import { BufferQueue } from '../../buffer/BufferQueue.js';
import { EventType } from '../../Events.js';
import type { ConnectionManager } from '../transport/ConnectionManager.js';
import type { BufferHeader } from '../transport/FrameDecoder.js';
import type { PartitionReceiver } from '../transport/PartitionReceiver.js';
import type { PeerConnection } from '../transport/PeerConnection.js';
import { ErrorKind } from '../transport/Protocol.js';
import { formatAddress, type RemoteAddress } from '../transport/RemoteAddress.js';
import type { ChannelAvailability, SubpartitionAddress } from '../../InputChannel.js';
import { InputChannelBase } from '../../InputChannelBase.js';
import { DEFAULT_RETRY, type RetryPolicy } from './LocalInputChannel.js';
import { codeOf, SpillwayError, type ErrorCode } from '../../../errors/Errors.js';

export type { RemoteAddress } from '../transport/RemoteAddress.js';

export interface RemoteInputChannelOptions {
  /** Buffers the channel owns for its whole life: its credit when the sender has no backlog. */
  exclusiveBuffers?: number;
  /** Backoff for a partition the remote TaskManager does not have yet. */
  retry?: RetryPolicy;
}

/**
 * Reads a subpartition of another TaskManager over the shared connection to it,
 * with credit-based flow control: the sender sends a data buffer only into a buffer
 * this channel holds free and has announced. It owns `exclusiveBuffers` buffers and
 * borrows floating ones from the gate's pool while the sender's backlog exceeds
 * them; a buffer the gate recycles comes back here and becomes credit again, or
 * returns to the pool when the backlog no longer needs it. Buffers carry sequence
 * numbers: a gap fails the channel, nothing is lost silently.
 */
export class RemoteInputChannel extends InputChannelBase implements PartitionReceiver, BufferRecycler {
  private readonly exclusive: number;
  private readonly retry: RetryPolicy;
  private readonly where: string;
  private readonly received = new BufferQueue<NetworkBuffer>();
  /** Empty segments the sender may fill: each is credit, announced or about to be. */
  private readonly free: Buffer[] = [];
  /** Segments taken from the pool and not returned: free, received, or held by the gate. */
  private owned = 0;
  private backlog = 0;
  private unannouncedCredit = 0;
  private expectedSequence = 0;
  private awaitingFloating = false;
  private connection: PeerConnection | null = null;
  private receiverId = -1;
  private requested = false;
  /** End of partition arrived: the request is over on both ends. */
  private ended = false;
  private firstRequestAt = 0;
  private backoff = 0;
  private attempts = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  /** The buffer being received: its segment, type and size. */
  private incoming: Buffer | null = null;
  private incomingType = DataType.DATA;
  private incomingCompressed = false;
  private incomingSize = 0;

  constructor(
    channelIndex: number,
    address: SubpartitionAddress,
    private readonly remote: RemoteAddress,
    private readonly connections: ConnectionManager,
    private readonly gate: ChannelAvailability,
    private readonly pool: BufferPool,
    options: RemoteInputChannelOptions = {},
  ) {
    super(channelIndex, address);
    this.exclusive = options.exclusiveBuffers ?? 2;
    this.retry = options.retry ?? DEFAULT_RETRY;
    // Without an exclusive buffer the first request would carry no credit and nothing could ever flow.
    if (!Number.isInteger(this.exclusive) || this.exclusive < 1) throw new SpillwayError('SPW_ERR_CONFIG', `exclusive buffers ${this.exclusive}: at least 1`);
    this.where = formatAddress(remote);
  }

  requestSubpartition(): void {
    if (this.requested || this.released) return;
    this.requested = true;
    this.takeExclusiveBuffers();
  }

  protected nextBuffer(): NetworkBuffer | null {
    return this.received.shift() ?? null;
  }

  protected freeHeld(): void {
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.endRequest(!this.ended && this.error === null);
    // A buffer half received: the connection no longer writes into it (unregistered, or closed).
    if (this.incoming !== null && this.incomingType === DataType.DATA) this.returnToPool(this.incoming);
    this.incoming = null;
    for (const buffer of this.received.drain()) buffer.recycle();
    for (const segment of this.free.splice(0)) this.returnToPool(segment);
  }

  /** A buffer the gate (or anyone) recycles comes back here: credit again, or back to the pool. */
  recycle(segment: Buffer): void {
    if (this.released || this.ended || this.error !== null || this.isSurplus()) {
      this.returnToPool(segment);
      return;
    }
    this.free.push(segment);
    this.addCredit(1);
  }

  onBufferHeader(header: BufferHeader): Buffer | null {
    if (this.released || this.error !== null) return null;
    if (header.sequence !== this.expectedSequence) {
      this.fail(`buffer ${header.sequence} arrived where buffer ${this.expectedSequence} was expected: data was lost or reordered`, 'SPW_ERR_CORRUPT_FRAME');
      return null;
    }
    this.expectedSequence = (this.expectedSequence + 1) >>> 0;
    if (header.size > this.pool.segmentSize) {
      this.fail(`a buffer of ${header.size} bytes does not fit this gate's ${this.pool.segmentSize}-byte buffers`, 'SPW_ERR_CORRUPT_FRAME');
      return null;
    }
    this.backlog = header.backlog;
    this.incomingType = header.dataType;
    this.incomingCompressed = header.compressed;
    this.incomingSize = header.size;
    if (header.dataType === DataType.EVENT) {
      // Events need no credit: they land in memory of their own.
      this.incoming = Buffer.allocUnsafe(header.size);
      return this.incoming;
    }
    const segment = this.free.pop();
    if (segment === undefined) {
      this.fail('the sender sent a buffer without credit', 'SPW_ERR_CORRUPT_FRAME');
      return null;
    }
    this.incoming = segment;
    return segment;
  }

  onBufferComplete(): void {
    const segment = this.incoming!;
    this.incoming = null;
    let buffer: NetworkBuffer;
    if (this.incomingType === DataType.EVENT) {
      buffer = unpooledBuffer(segment, DataType.EVENT);
      if (segment.length > 0 && segment[0] === EventType.END_OF_PARTITION) this.onEndOfPartition();
    } else {
      buffer = new NetworkBuffer(segment, this);
      buffer.size = this.incomingSize;
      buffer.compressed = this.incomingCompressed;
      this.requestFloatingBuffers();
    }
    this.received.push(buffer);
    if (this.received.length === 1) this.gate.notifyChannelNonEmpty(this);
  }

  onErrorResponse(kind: ErrorKind, message: string): void {
    if (kind === ErrorKind.PARTITION_NOT_FOUND) this.retryRequest();
    else this.fail(`TaskManager ${this.where} reports: ${message}`, kind === ErrorKind.PARTITION_RELEASED ? 'SPW_ERR_PARTITION_RELEASED' : 'SPW_ERR_CONNECTION_LOST');
  }

  onConnectionFailed(error: Error): void {
    // The connection is gone: nothing to cancel or unregister.
    this.connection = null;
    if (!this.ended) this.fail(error.message, codeOf(error, 'SPW_ERR_CONNECTION_LOST'));
  }

  takeCredit(): number {
    const credit = this.unannouncedCredit;
    this.unannouncedCredit = 0;
    return credit;
  }

  /**
   * Takes the channel's exclusive buffers, then requests the subpartition. The gate's
   * pool has them reserved, but another pool may still hold the memory beyond its
   * share: then they come as it recycles.
   */
  private takeExclusiveBuffers(): void {
    while (this.owned < this.exclusive) {
      if (this.released || this.error !== null) return;
      const buffer = this.pool.isDestroyed ? null : this.pool.requestBuffer();
      if (buffer === null) {
        this.awaitExclusiveBuffer();
        return;
      }
      this.free.push(buffer.segment);
      this.owned++;
    }
    try {
      this.connection = this.connections.connection(this.remote);
      this.receiverId = this.connection.register(this);
    } catch (error) {
      this.fail(error instanceof Error ? error.message : String(error), codeOf(error, 'SPW_ERR_CONNECTION_LOST'));
      return;
    }
    this.firstRequestAt = Date.now();
    this.backoff = this.retry.initialBackoffMs;
    this.sendRequest();
  }

  private awaitExclusiveBuffer(): void {
    if (this.pool.isDestroyed) {
      this.fail("the gate's buffer pool was destroyed before the channel could take its exclusive buffers");
      return;
    }
    this.pool.requestBufferAsync().then(
      (buffer) => {
        this.owned++;
        if (this.released) this.returnToPool(buffer.segment);
        else {
          this.free.push(buffer.segment);
          this.takeExclusiveBuffers();
        }
      },
      (error: Error) => this.fail(error.message, codeOf(error, 'SPW_ERR_CONNECTION_LOST')),
    );
  }

  /** (Re)sends the request; every free buffer is its initial credit. */
  private sendRequest(): void {
    this.retryTimer = null;
    if (this.released || this.error !== null || this.connection === null) return;
    this.attempts++;
    this.unannouncedCredit = 0;
    const { partitionId, subpartition } = this.address;
    this.connection.requestPartition(this.receiverId, partitionId, subpartition, this.free.length);
  }

  private retryRequest(): void {
    if (this.released || this.error !== null) return;
    const elapsed = Date.now() - this.firstRequestAt;
    if (elapsed + this.backoff > this.retry.timeoutMs) {
      this.fail(`partition ${this.address.partitionId} not found on TaskManager ${this.where} after ${this.attempts} requests in ${elapsed} ms`, 'SPW_ERR_PARTITION_NOT_FOUND');
      return;
    }
    this.retryTimer = setTimeout(() => this.sendRequest(), this.backoff);
    this.backoff = Math.min(this.backoff * 2, this.retry.maxBackoffMs);
  }

  /** Flink's rule: hold backlog + exclusive free buffers, borrowing floating ones for the difference. */
  private requestFloatingBuffers(): void {
    if (this.pool.isDestroyed) {
      this.fail("the gate's buffer pool was destroyed while the channel was reading");
      return;
    }
    const wanted = this.backlog + this.exclusive;
    while (this.free.length < wanted && !this.awaitingFloating) {
      const buffer = this.pool.requestBuffer();
      if (buffer === null) {
        this.awaitFloatingBuffer();
        return;
      }
      this.free.push(buffer.segment);
      this.owned++;
      this.addCredit(1);
    }
  }

  /** Waits for the pool to have a buffer again; one wait at a time. */
  private awaitFloatingBuffer(): void {
    this.awaitingFloating = true;
    this.pool.requestBufferAsync().then(
      (buffer) => {
        this.awaitingFloating = false;
        this.owned++;
        this.recycle(buffer.segment);
        if (!this.released && !this.ended && this.error === null) this.requestFloatingBuffers();
      },
      () => {
        // The pool was destroyed: the gate is gone.
        this.awaitingFloating = false;
      },
    );
  }

  /** True if a recycled segment is not needed: it is floating and the free ones cover the backlog. */
  private isSurplus(): boolean {
    return this.owned > this.exclusive && this.free.length >= this.backlog + this.exclusive;
  }

  private addCredit(credit: number): void {
    const announce = this.unannouncedCredit === 0;
    this.unannouncedCredit += credit;
    if (announce && this.connection !== null) this.connection.announceCredit(this.receiverId);
  }

  private returnToPool(segment: Buffer): void {
    this.owned--;
    this.pool.recycle(segment);
  }

  private onEndOfPartition(): void {
    this.ended = true;
    // The server ended the request with this event; free buffers go back now.
    this.endRequest(false);
    for (const segment of this.free.splice(0)) this.returnToPool(segment);
  }

  /** Leaves the connection, telling the server to drop the request if it is still open there. */
  private endRequest(cancel: boolean): void {
    const connection = this.connection;
    if (connection === null) return;
    this.connection = null;
    if (cancel) connection.cancel(this.receiverId);
    connection.unregister(this.receiverId);
  }

  /** Fails the channel for good; its reader sees `code` with a message that names the channel and the peer. */
  private fail(reason: string, code: ErrorCode = 'SPW_ERR_CONNECTION_LOST'): void {
    if (this.error !== null || this.released) return;
    const { partitionId, subpartition } = this.address;
    this.error = new SpillwayError(code, `channel ${this.channelIndex} (partition ${partitionId}, subpartition ${subpartition}, TaskManager ${this.where}): ${reason}`);
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.endRequest(!this.ended);
    this.gate.notifyChannelNonEmpty(this);
  }
}

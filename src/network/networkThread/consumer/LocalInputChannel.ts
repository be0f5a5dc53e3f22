import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import { PartitionNotFoundError, type ResultPartitionManager } from '../partition/ResultPartitionManager.js';
import type { ResultSubpartitionView } from '../partition/ResultSubpartition.js';
import type { ChannelAvailability, SubpartitionAddress } from '../../InputChannel.js';
import { InputChannelBase } from '../../InputChannelBase.js';
import { networkCounters } from '../NetworkCounters.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** Backoff for a partition that is not registered yet (Flink's request-backoff: initial 100 ms, max 10 s). */
export interface RetryPolicy {
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** Give up once this much time has passed since the first request. */
  timeoutMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { initialBackoffMs: 100, maxBackoffMs: 10_000, timeoutMs: 30_000 };

/** Reads a subpartition in the same process: the producer's buffers are handed over, never copied. */
export class LocalInputChannel extends InputChannelBase {
  private view: ResultSubpartitionView | null = null;
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(
    channelIndex: number,
    address: SubpartitionAddress,
    private readonly partitions: ResultPartitionManager,
    private readonly gate: ChannelAvailability,
    private readonly retry: RetryPolicy = DEFAULT_RETRY,
    private readonly where = 'this TaskManager',
  ) {
    super(channelIndex, address);
  }

  requestSubpartition(): void {
    this.attempt(Date.now(), this.retry.initialBackoffMs);
  }

  protected nextBuffer(): NetworkBuffer | null {
    const buffer = this.view === null ? null : this.view.pollNext();
    if (buffer !== null) networkCounters.localBytes += buffer.size;
    return buffer;
  }

  protected freeHeld(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.view?.release();
  }

  private attempt(firstTry: number, backoff: number): void {
    if (this.released) return;
    const { partitionId, subpartition } = this.address;
    try {
      this.view = this.partitions.createSubpartitionView(partitionId, subpartition, () => this.gate.notifyChannelNonEmpty(this));
    } catch (error) {
      if (error instanceof PartitionNotFoundError && Date.now() - firstTry + backoff <= this.retry.timeoutMs) {
        this.retryTimer = setTimeout(() => this.attempt(firstTry, Math.min(backoff * 2, this.retry.maxBackoffMs)), backoff);
        return;
      }
      const message = error instanceof PartitionNotFoundError ? `partition ${partitionId} not found on ${this.where}` : String(error);
      this.error = new SpillwayError('SPW_ERR_PARTITION_NOT_FOUND', `channel ${this.channelIndex}: ${message}`, { cause: error });
      this.gate.notifyChannelNonEmpty(this);
    }
  }
}

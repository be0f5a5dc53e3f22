import { compressInPlace } from '../buffer/BufferCodec.js';
import type { CompressionCodec } from '../buffer/CompressionCodec.js';
import type { NetworkBuffer } from '../buffer/NetworkBuffer.js';
import type { ResultPartitionWriter } from '../ResultPartitionWriter.js';
import { encodeBytes, encodeError, Op, type HandoverPort } from '../handover/Handover.js';
import type { ThreadBufferPool } from './ThreadBufferPool.js';
import { deserializeError, SpillwayError, type SerializedError } from '../../errors/Errors.js';

/**
 * A task thread's handle on a partition that lives in the network thread: filled
 * buffers pass there by index, and finish() resolves once the partition there is
 * readable.
 */
export class ThreadResultPartition implements ResultPartitionWriter {
  private failure: Error | null = null;
  private finishing: Promise<void> | null = null;
  private onFinished: ((error: Error | null) => void) | null = null;
  /** Unaligned barriers sent, waiting for the network thread's copies of what they overtook, in order. */
  private readonly overtaking: { resolve: (buffers: Uint8Array[][]) => void; reject: (error: Error) => void }[] = [];

  constructor(
    private readonly port: HandoverPort,
    private readonly index: number,
    readonly id: string,
    readonly numSubpartitions: number,
    readonly pool: ThreadBufferPool,
    /** Compress each buffer here with this codec, in the producing task's thread, as Flink does. */
    private readonly compression: CompressionCodec | null,
  ) {}

  add(buffer: NetworkBuffer, subpartition: number): void {
    this.check(buffer);
    if (this.compression !== null) compressInPlace(buffer, this.compression);
    const { size, compressed } = buffer;
    this.port.add([Op.BUFFER, this.index, subpartition, this.pool.handedOver(buffer), size, compressed ? 1 : 0]);
  }

  broadcast(buffer: NetworkBuffer): void {
    this.check(buffer);
    if (this.compression !== null) compressInPlace(buffer, this.compression);
    const { size, compressed } = buffer;
    this.port.add([Op.BROADCAST, this.index, this.pool.handedOver(buffer), size, compressed ? 1 : 0]);
  }

  addEvent(event: Uint8Array, subpartition: number): void {
    if (this.failure !== null) throw this.failure;
    this.port.add([Op.EVENT_OUT, this.index, subpartition, ...encodeBytes(event)]);
  }

  addPriorityEvent(event: Uint8Array): Promise<Uint8Array[][]> {
    if (this.failure !== null) throw this.failure;
    this.port.add([Op.PRIORITY_EVENT, this.index, ...encodeBytes(event)]);
    return new Promise((resolve, reject) => this.overtaking.push({ resolve, reject }));
  }

  /** The network thread's answer to the oldest PRIORITY_EVENT still unanswered. */
  overtaken(buffers: Uint8Array[][]): void {
    this.overtaking.shift()?.resolve(buffers);
  }

  private check(buffer: NetworkBuffer): void {
    if (this.failure === null) return;
    buffer.recycle();
    throw this.failure;
  }

  finish(): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    this.finishing ??= new Promise((resolve, reject) => {
      this.onFinished = (error) => (error === null ? resolve() : reject(error));
      this.port.add([Op.FINISH, this.index]);
    });
    return this.finishing;
  }

  /** The network thread spills when it cannot grant: nothing to do here. */
  onPoolExhausted(): void {}

  /** The task failed: the partition is dropped there, with this cause. */
  release(cause: Error): void {
    if (this.failure !== null) return;
    this.failure = cause;
    this.pool.release(cause);
    for (const waiter of this.overtaking.splice(0)) waiter.reject(cause);
    this.port.add([Op.RELEASE, this.index, ...encodeError(cause, 'SPW_ERR_PARTITION_RELEASED')]);
  }

  /** The network thread answered FINISH. */
  finished(error: SerializedError | null): void {
    this.pool.release(new SpillwayError('SPW_ERR_PARTITION_RELEASED', `partition ${this.id} is finished`));
    this.onFinished?.(error === null ? null : deserializeError(error));
  }

  /** The partition failed there, for example because its consumer is gone: a writer waiting for a buffer learns it too. */
  failed(error: SerializedError): void {
    this.failure ??= deserializeError(error);
    this.pool.release(this.failure);
    for (const waiter of this.overtaking.splice(0)) waiter.reject(this.failure);
  }
}

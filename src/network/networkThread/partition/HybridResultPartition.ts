import path from 'node:path';
import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import { EventType, eventBuffer } from '../../Events.js';
import { PartitionFileWriter, readBufferAt } from './PartitionFile.js';
import type { PartitionContext, PartitionStorage } from './PartitionType.js';
import { PartitionReleasedError, type AvailabilityListener, type ResultSubpartitionView } from './ResultSubpartition.js';
import { SpillwayError } from '../../../errors/Errors.js';

/** Not yet in the data file. */
const UNWRITTEN = -1;

/** One subpartition's buffers: in memory (until dropped) and, once written, at their offsets in the data file. */
interface Subpartition {
  memory: (NetworkBuffer | null)[];
  offsets: number[];
  views: Set<HybridView>;
}

/**
 * The storage of a `hybrid` partition (what its ResultPartition keeps and reads), after
 * Flink FLIP-235 (HYBRID_FULL). Every buffer is
 * appended to the partition's one data file as it arrives, and kept in memory while
 * the budget allows, for consumers that keep up. A written buffer leaves memory once
 * a consumer has read it, or when the pool runs short: the producer then waits only
 * for the disk, never for a slow or not yet deployed consumer. A reader takes each
 * buffer from memory if it is still there, else from the file, in order; once the
 * partition is finished every subpartition can be read again from the start.
 */
export class HybridResultPartition implements PartitionStorage {
  private readonly data: PartitionFileWriter;
  private readonly name: string;
  private readonly subpartitions: Subpartition[];
  /** Buffers appended since the last write was started: [subpartition, index] pairs. */
  private unwritten: number[] = [];
  private writeScheduled = false;
  private memoryBytes = 0;
  /** The writer waits for a buffer and nothing written could be dropped: drop as soon as writes complete. */
  private starved = false;
  private finished = false;
  private failure: Error | null = null;

  constructor(private readonly context: PartitionContext) {
    if (context.spillDir === '') throw new SpillwayError('SPW_ERR_CONFIG', `hybrid partition ${context.id} needs a spill directory`);
    this.name = `hybrid partition ${context.id}`;
    this.data = new PartitionFileWriter(path.join(context.spillDir, 'data'));
    this.subpartitions = Array.from({ length: context.numSubpartitions }, () => ({ memory: [], offsets: [], views: new Set() }));
  }

  get bytesOnDisk(): number {
    return this.data.size;
  }

  get describeData(): string {
    return `data file of ${this.name}`;
  }

  add(buffer: NetworkBuffer, subpartition: number): void {
    if (this.failure !== null || this.finished) {
      buffer.recycle();
      throw this.failure ?? new SpillwayError('SPW_ERR_PARTITION_RELEASED', `${this.name} is finished`);
    }
    const sub = this.subpartitions[subpartition];
    sub.memory.push(buffer);
    sub.offsets.push(UNWRITTEN);
    this.memoryBytes += buffer.capacity;
    this.unwritten.push(subpartition, sub.memory.length - 1);
    this.scheduleWrite();
    for (const view of sub.views) view.dataAdded();
  }

  broadcast(buffer: NetworkBuffer): void {
    // Each subpartition's reader follows its own order in memory and file: a copy per subpartition.
    const last = this.subpartitions.length - 1;
    try {
      for (let i = 0; i < last; i++) this.add(buffer.retain(), i);
    } catch (error) {
      buffer.recycle();
      throw error;
    }
    this.add(buffer, last);
  }

  async finish(): Promise<void> {
    if (this.failure !== null) throw this.failure;
    this.finished = true;
    for (const sub of this.subpartitions) for (const view of sub.views) view.dataAdded();
    this.writeNow();
    await this.data.drained();
    if (this.failure !== null) throw this.failure;
  }

  createReadView(subpartition: number, listener: AvailabilityListener): ResultSubpartitionView {
    if (this.failure !== null) throw this.failure;
    const view = new HybridView(this, subpartition, listener);
    this.subpartitions[subpartition].views.add(view);
    if (this.subpartitions[subpartition].memory.length > 0 || this.finished) queueMicrotask(listener);
    return view;
  }

  onPoolExhausted(): void {
    if (this.dropWritten(() => true) === 0) this.starved = true;
  }

  release(cause: Error): void {
    if (this.failure !== null) return;
    this.failure = new PartitionReleasedError(this.name, cause);
    for (const sub of this.subpartitions) {
      for (let i = 0; i < sub.memory.length; i++) this.drop(sub, i);
      for (const view of sub.views) view.fail(this.failure);
      sub.views.clear();
    }
    this.data.close();
  }

  /** For views. */
  subpartition(index: number): Subpartition {
    return this.subpartitions[index];
  }

  get isFinished(): boolean {
    return this.finished;
  }

  get fd(): number {
    return this.data.fd;
  }

  /** A view read buffer i from memory: once written, it need not stay there. */
  read(sub: Subpartition, i: number): void {
    if (sub.offsets[i] !== UNWRITTEN) this.drop(sub, i);
  }

  readPoolBuffer(): Promise<NetworkBuffer> {
    return this.context.readPool().requestBufferAsync();
  }

  private scheduleWrite(): void {
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    // Buffers of one turn go to disk in one write.
    queueMicrotask(() => this.writeNow());
  }

  private writeNow(): void {
    this.writeScheduled = false;
    if (this.unwritten.length === 0 || this.failure !== null) return;
    const entries = this.unwritten;
    this.unwritten = [];
    const buffers: NetworkBuffer[] = [];
    for (let k = 0; k < entries.length; k += 2) buffers.push(this.subpartitions[entries[k]].memory[entries[k + 1]]!);
    this.data.append(buffers).then(
      (offsets) => this.written(entries, offsets),
      (error: Error) => this.release(new SpillwayError('SPW_ERR_PARTITION_IO', `${this.name}: writing its data file failed: ${error.message}`, { cause: error })),
    );
  }

  private written(entries: number[], offsets: number[]): void {
    if (this.failure !== null) return;
    for (let k = 0; k < entries.length; k += 2) {
      const sub = this.subpartitions[entries[k]];
      const i = entries[k + 1];
      sub.offsets[i] = offsets[k / 2];
      // A reader already past it took its own reference.
      for (const view of sub.views) {
        if (view.position <= i) continue;
        this.drop(sub, i);
        break;
      }
    }
    const budget = this.context.config.memoryBudget;
    if (this.starved) {
      this.starved = false;
      this.dropWritten(() => true);
    } else if (this.memoryBytes > budget) {
      this.dropWritten(() => this.memoryBytes > budget / 2);
    }
  }

  /** Drops written buffers from memory, oldest first per subpartition, while `more()`; returns how many. */
  private dropWritten(more: () => boolean): number {
    let dropped = 0;
    for (const sub of this.subpartitions) {
      for (let i = 0; i < sub.memory.length && more(); i++) {
        if (sub.memory[i] !== null && sub.offsets[i] !== UNWRITTEN) {
          this.drop(sub, i);
          dropped++;
        }
      }
    }
    return dropped;
  }

  private drop(sub: Subpartition, i: number): void {
    const buffer = sub.memory[i];
    if (buffer === null || buffer === undefined) return;
    sub.memory[i] = null;
    this.memoryBytes -= buffer.capacity;
    buffer.recycle();
  }
}

/**
 * A reader of one subpartition of a hybrid partition: buffer i from memory if it is
 * still there, else read from the data file (with a buffer of the read pool) before
 * it is handed out; end-of-partition once the partition finished and all was read.
 */
class HybridView implements ResultSubpartitionView {
  /** The next buffer to hand out. */
  position = 0;
  private prefetched: NetworkBuffer | null = null;
  private reading = false;
  private consumed = false;
  private released = false;
  private error: Error | null = null;

  constructor(
    private readonly storage: HybridResultPartition,
    private readonly index: number,
    private readonly listener: AvailabilityListener,
  ) {}

  pollNext(): NetworkBuffer | null {
    if (this.error !== null) throw this.error;
    if (this.released || this.consumed) return null;
    const sub = this.storage.subpartition(this.index);
    const i = this.position;
    if (this.prefetched !== null) {
      const buffer = this.prefetched;
      this.prefetched = null;
      this.position++;
      return buffer;
    }
    if (i >= sub.memory.length) {
      if (!this.storage.isFinished) return null;
      this.consumed = true;
      sub.views.delete(this);
      return eventBuffer(EventType.END_OF_PARTITION);
    }
    const kept = sub.memory[i];
    if (kept === null) {
      this.readFromDisk(sub.offsets[i]);
      return null;
    }
    const buffer = kept.retain();
    this.position++;
    this.storage.read(sub, i);
    return buffer;
  }

  get backlog(): number {
    return this.storage.subpartition(this.index).memory.length - this.position;
  }

  get isConsumed(): boolean {
    return this.consumed;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.prefetched?.recycle();
    this.prefetched = null;
    this.storage.subpartition(this.index).views.delete(this);
  }

  /** The producer added a buffer, or finished. */
  dataAdded(): void {
    if (this.position >= this.storage.subpartition(this.index).memory.length - 1) this.listener();
  }

  fail(error: Error): void {
    if (this.released || this.error !== null) return;
    this.error = error;
    this.prefetched?.recycle();
    this.prefetched = null;
    this.listener();
  }

  private readFromDisk(offset: number): void {
    if (this.reading) return;
    this.reading = true;
    void this.storage.readPoolBuffer().then(async (buffer) => {
      try {
        await readBufferAt(this.storage.fd, offset, buffer, this.storage.describeData);
      } catch (error) {
        buffer.recycle();
        this.reading = false;
        this.fail(error as Error);
        return;
      }
      this.reading = false;
      if (this.released || this.error !== null) buffer.recycle();
      else {
        this.prefetched = buffer;
        this.listener();
      }
    }, (error: Error) => {
      this.reading = false;
      this.fail(error);
    });
  }
}

import fs from 'node:fs';
import path from 'node:path';
import { crc32 } from '@node-rs/crc32';
import type { BufferPool } from '../../buffer/BufferPool.js';
import type { NetworkBuffer } from '../../buffer/NetworkBuffer.js';
import { BufferQueue } from '../../buffer/BufferQueue.js';
import { EventType, eventBuffer } from '../../Events.js';
import { BUFFER_HEADER_BYTES, CorruptPartitionFileError, PartitionFileWriter, readBufferAt } from './PartitionFile.js';
import type { PartitionContext, PartitionStorage } from './PartitionType.js';
import { PartitionReleasedError, type AvailabilityListener, type ResultSubpartitionView } from './ResultSubpartition.js';
import { SpillwayError } from '../../../errors/Errors.js';

/**
 * The index file: which buffers of the data file each subpartition reads, region by
 * region. Big-endian; the CRC-32 is of every byte before it.
 *
 * | bytes | field |
 * | --- | --- |
 * | 4 | magic `0x53505849` ("SPXI") |
 * | 4 | subpartitions n |
 * | 4 | regions r |
 * | 12 per region and subpartition, r x n, region-major | offset of the first buffer (8), buffers (4) |
 * | 4 | CRC-32 |
 */
const INDEX_MAGIC = 0x5350_5849;
const INDEX_HEAD_BYTES = 12;
const INDEX_ENTRY_BYTES = 12;

/** Buffers appended (and given back to the pool) together. */
const WRITE_BATCH = 64;

/** Buffers a reader may hold read ahead of its consumer. */
const READ_AHEAD = 4;

/** Where one subpartition's buffers of one region are. */
interface Run {
  offset: number;
  buffers: number;
}

/**
 * The storage of a `sort-merge` partition (what its ResultPartition keeps and reads),
 * after Flink FLIP-148. Buffers for every
 * subpartition are held together in the partition's pool; when the budget fills (or
 * the writer finds the pool empty) they are grouped by subpartition, in arrival order
 * within each (no key sort), and appended as one region to the partition's single
 * data file. At finish an index file lists, per region and subpartition, where its
 * buffers start and how many there are: two files per partition, whatever the
 * fan-out. A broadcast buffer is written once, in a region that every subpartition
 * reads. Readers share the file and are served in file-offset order by one read loop,
 * with buffers from the TaskManager's bounded read pool.
 */
export class SortMergeResultPartition implements PartitionStorage {
  private readonly data: PartitionFileWriter;
  private readonly indexFile: string;
  private readonly name: string;
  /** The region being gathered: buffers per subpartition, or one list of broadcast buffers. */
  private pending: NetworkBuffer[][];
  private pendingBroadcast: NetworkBuffer[] = [];
  private pendingBytes = 0;
  /** Where the next region starts: the bytes of every region handed to the writer. */
  private planned = 0;
  /** Runs of every region written or being written, region-major. */
  private readonly runs: Run[][] = [];
  private finished = false;
  private failure: Error | null = null;
  private index: Promise<Run[][]> | null = null;
  private readonly readers = new Set<SortMergeView>();
  private serving = false;

  constructor(private readonly context: PartitionContext) {
    if (context.spillDir === '') throw new SpillwayError('SPW_ERR_CONFIG', `sort-merge partition ${context.id} needs a spill directory`);
    this.name = `sort-merge partition ${context.id}`;
    this.data = new PartitionFileWriter(path.join(context.spillDir, 'data'));
    this.indexFile = path.join(context.spillDir, 'index');
    this.pending = this.emptyRegion();
  }

  get bytesOnDisk(): number {
    return this.data.size;
  }

  add(buffer: NetworkBuffer, subpartition: number): void {
    if (!this.accept(buffer)) return;
    if (this.pendingBroadcast.length > 0) this.flush();
    this.pending[subpartition].push(buffer);
    this.held(buffer);
  }

  broadcast(buffer: NetworkBuffer): void {
    if (!this.accept(buffer)) return;
    if (this.pending.some((buffers) => buffers.length > 0)) this.flush();
    this.pendingBroadcast.push(buffer);
    this.held(buffer);
  }

  async finish(): Promise<void> {
    if (this.failure !== null) throw this.failure;
    this.finished = true;
    this.flush();
    await this.data.drained();
    if (this.failure !== null) throw this.failure;
    void this.data.fd; // an empty partition still has its (empty) data file
    await fs.promises.writeFile(this.indexFile, encodeIndex(this.runs, this.context.numSubpartitions));
    this.wake();
  }

  createReadView(subpartition: number, listener: AvailabilityListener): ResultSubpartitionView {
    if (this.failure !== null) throw this.failure;
    const view = new SortMergeView(this, subpartition, listener);
    this.readers.add(view);
    if (this.finished) queueMicrotask(() => this.serve());
    return view;
  }

  /** The writer waits for a buffer: what is held goes to disk now, and comes back once written. */
  onPoolExhausted(): void {
    if (!this.data.isWriting) this.flush();
  }

  release(cause: Error): void {
    if (this.failure !== null) return;
    this.failure = new PartitionReleasedError(this.name, cause);
    for (const buffers of this.pending) for (const buffer of buffers.splice(0)) buffer.recycle();
    for (const buffer of this.pendingBroadcast.splice(0)) buffer.recycle();
    for (const reader of this.readers) reader.fail(this.failure);
    this.readers.clear();
    this.data.close();
  }

  /** For views: the runs of every region, read from the index file once. */
  loadIndex(): Promise<Run[][]> {
    this.index ??= fs.promises.readFile(this.indexFile).then(
      (bytes) => decodeIndex(bytes, this.context.numSubpartitions, `index file of ${this.name}`),
      (error: Error) => {
        throw new CorruptPartitionFileError(`index file of ${this.name} cannot be read: ${error.message}`);
      },
    );
    return this.index;
  }

  forget(view: SortMergeView): void {
    this.readers.delete(view);
  }

  /** A view wants buffers: run the read loop unless it runs. */
  wake(): void {
    if (!this.serving && this.finished) void this.serve();
  }

  /**
   * The read loop: while some reader wants buffers, serve the readers in the order of
   * their next offset in the data file, a few buffers each, so that the disk reads
   * the file front to back however many readers there are.
   */
  private async serve(): Promise<void> {
    if (this.serving || this.failure !== null) return;
    this.serving = true;
    try {
      for (;;) {
        const wanting = [...this.readers].filter((r) => r.wantsData);
        if (wanting.length === 0 || this.failure !== null) return;
        wanting.sort((a, b) => a.nextOffset - b.nextOffset);
        for (const reader of wanting) await reader.readAhead(this.context.readPool(), this.data.fd);
      }
    } finally {
      this.serving = false;
    }
  }

  private accept(buffer: NetworkBuffer): boolean {
    if (this.failure === null && !this.finished) return true;
    buffer.recycle();
    throw this.failure ?? new SpillwayError('SPW_ERR_PARTITION_RELEASED', `${this.name} is finished`);
  }

  private held(buffer: NetworkBuffer): void {
    this.pendingBytes += buffer.capacity;
    if (this.pendingBytes >= this.flushBytes) this.flush();
  }

  /**
   * Half of what the partition may hold: the writer fills one half while the other is
   * written (double buffering). The pool's share of network memory may be below the
   * budget it was sized for: then half of that share, less the writer's own buffers.
   */
  private get flushBytes(): number {
    const { pool, numSubpartitions, config } = this.context;
    const share = (pool.limit - numSubpartitions - 1) * pool.segmentSize;
    return Math.max(pool.segmentSize, Math.min(config.memoryBudget, share) / 2);
  }

  /** Appends the region gathered so far to the data file; its buffers return to the pool once written. */
  private flush(): void {
    if (this.pendingBytes === 0 || this.failure !== null) return;
    const n = this.context.numSubpartitions;
    const ordered: NetworkBuffer[] = [];
    let region: Run[];
    let offset = this.planned;
    if (this.pendingBroadcast.length > 0) {
      const run = { offset, buffers: this.pendingBroadcast.length };
      region = Array.from({ length: n }, () => run);
      ordered.push(...this.pendingBroadcast);
      this.pendingBroadcast = [];
    } else {
      region = this.pending.map((buffers) => {
        const run = { offset, buffers: buffers.length };
        for (const buffer of buffers) offset += bufferBytes(buffer);
        ordered.push(...buffers);
        return run;
      });
      this.pending = this.emptyRegion();
    }
    this.runs.push(region);
    this.pendingBytes = 0;
    for (const buffer of ordered) this.planned += bufferBytes(buffer);
    // Appended a batch at a time, so that each batch's buffers go back to the writer as soon as they are on disk.
    for (let from = 0; from < ordered.length; from += WRITE_BATCH) {
      const batch = ordered.slice(from, from + WRITE_BATCH);
      this.data.append(batch).then(
        () => {
          for (const buffer of batch) buffer.recycle();
        },
        (error: Error) => {
          for (const buffer of batch) buffer.recycle();
          this.release(new SpillwayError('SPW_ERR_PARTITION_IO', `${this.name}: writing its data file failed: ${error.message}`, { cause: error }));
        },
      );
    }
  }

  private emptyRegion(): NetworkBuffer[][] {
    return Array.from({ length: this.context.numSubpartitions }, () => []);
  }

  get describeData(): string {
    return `data file of ${this.name}`;
  }
}

/** A buffer's bytes in the data file: its header and payload. */
function bufferBytes(buffer: NetworkBuffer): number {
  return BUFFER_HEADER_BYTES + buffer.size;
}

function encodeIndex(runs: Run[][], n: number): Buffer {
  const bytes = Buffer.alloc(INDEX_HEAD_BYTES + runs.length * n * INDEX_ENTRY_BYTES + 4);
  bytes.writeUInt32BE(INDEX_MAGIC, 0);
  bytes.writeUInt32BE(n, 4);
  bytes.writeUInt32BE(runs.length, 8);
  let at = INDEX_HEAD_BYTES;
  for (const region of runs) {
    for (const run of region) {
      bytes.writeBigUInt64BE(BigInt(run.offset), at);
      bytes.writeUInt32BE(run.buffers, at + 8);
      at += INDEX_ENTRY_BYTES;
    }
  }
  bytes.writeUInt32BE(crc32(bytes.subarray(0, at)), at);
  return bytes;
}

function decodeIndex(bytes: Buffer, n: number, describe: string): Run[][] {
  if (bytes.length < INDEX_HEAD_BYTES + 4) throw new CorruptPartitionFileError(`${describe} is truncated: ${bytes.length} bytes`);
  const regions = bytes.readUInt32BE(8);
  const expected = INDEX_HEAD_BYTES + regions * n * INDEX_ENTRY_BYTES + 4;
  if (bytes.readUInt32BE(0) !== INDEX_MAGIC || bytes.readUInt32BE(4) !== n) throw new CorruptPartitionFileError(`${describe} is corrupt: a bad head`);
  if (bytes.length !== expected) {
    throw new CorruptPartitionFileError(`${describe} is ${bytes.length < expected ? 'truncated' : 'corrupt'}: ${bytes.length} bytes where ${regions} regions take ${expected}`);
  }
  if (crc32(bytes.subarray(0, expected - 4)) !== bytes.readUInt32BE(expected - 4)) throw new CorruptPartitionFileError(`${describe} is corrupt: its checksum does not match`);
  const runs: Run[][] = [];
  let at = INDEX_HEAD_BYTES;
  for (let r = 0; r < regions; r++) {
    const region: Run[] = [];
    for (let s = 0; s < n; s++, at += INDEX_ENTRY_BYTES) region.push({ offset: Number(bytes.readBigUInt64BE(at)), buffers: bytes.readUInt32BE(at + 8) });
    runs.push(region);
  }
  return runs;
}

/**
 * One reader of one subpartition: walks its runs region by region. The read loop
 * fills its queue (at most READ_AHEAD buffers); pollNext() takes from it, and ends
 * with end-of-partition once every run is read.
 */
class SortMergeView implements ResultSubpartitionView {
  private readonly queue = new BufferQueue<NetworkBuffer>();
  private runs: Run[] | null = null;
  private region = 0;
  private left = 0;
  private offset = 0;
  private loading = false;
  private ended = false;
  private consumed = false;
  private released = false;
  private error: Error | null = null;
  private dataQueued = 0;
  private totalLeft = 0;
  /**
   * The consumer has taken a buffer: it reads. Until then the view holds one buffer
   * at most, so that readers whose consumers wait (the probe side of a join) cannot
   * take the read pool from those that read.
   */
  private reading = false;

  constructor(
    private readonly storage: SortMergeResultPartition,
    private readonly subpartition: number,
    private readonly listener: AvailabilityListener,
  ) {}

  pollNext(): NetworkBuffer | null {
    if (this.error !== null) throw this.error;
    if (this.released || this.consumed) return null;
    const buffer = this.queue.shift();
    if (buffer !== undefined) {
      this.dataQueued--;
      this.reading = true;
      this.storage.wake();
      return buffer;
    }
    if (this.ended) {
      this.consumed = true;
      this.storage.forget(this);
      return eventBuffer(EventType.END_OF_PARTITION);
    }
    this.storage.wake();
    return null;
  }

  get backlog(): number {
    return this.dataQueued + this.totalLeft;
  }

  get isConsumed(): boolean {
    return this.consumed;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    for (const buffer of this.queue.drain()) buffer.recycle();
    this.storage.forget(this);
  }

  /** For the read loop: this view wants buffers read for it. */
  get wantsData(): boolean {
    return !this.released && this.error === null && !this.ended && !this.loading && this.queue.length < this.aheadLimit;
  }

  get nextOffset(): number {
    return this.runs === null ? -1 : this.offset;
  }

  /** Reads up to READ_AHEAD buffers of its current run (loading the index first). */
  async readAhead(pool: BufferPool, fd: number): Promise<void> {
    try {
      if (this.runs === null) {
        this.loading = true;
        const all = await this.storage.loadIndex();
        this.loading = false;
        this.runs = all.map((region) => region[this.subpartition]);
        this.totalLeft = this.runs.reduce((sum, run) => sum + run.buffers, 0);
        this.nextRun();
      }
      while (this.left > 0 && this.queue.length < this.aheadLimit && !this.released && this.error === null) {
        const buffer = await pool.requestBufferAsync();
        try {
          this.offset = await readBufferAt(fd, this.offset, buffer, this.storage.describeData);
        } catch (error) {
          buffer.recycle();
          throw error;
        }
        if (this.released) {
          buffer.recycle();
          return;
        }
        this.queue.push(buffer);
        this.dataQueued++;
        this.totalLeft--;
        if (--this.left === 0) this.nextRun();
        // At once: the consumer must be able to take it while the loop waits for the next buffer.
        if (this.queue.length === 1) this.listener();
      }
      if (this.ended) this.listener();
    } catch (error) {
      this.loading = false;
      this.fail(error as Error);
    }
  }

  fail(error: Error): void {
    if (this.released || this.error !== null) return;
    this.error = error;
    for (const buffer of this.queue.drain()) buffer.recycle();
    this.listener();
  }

  private get aheadLimit(): number {
    return this.reading ? READ_AHEAD : 1;
  }

  private nextRun(): void {
    const runs = this.runs!;
    while (this.region < runs.length && runs[this.region].buffers === 0) this.region++;
    if (this.region >= runs.length) {
      this.ended = true;
      return;
    }
    this.offset = runs[this.region].offset;
    this.left = runs[this.region].buffers;
    this.region++;
  }
}

import type { Unpackr } from 'msgpackr';
import type { KeyFn } from '../../job/JobDefinition.js';
import { naturalOrder } from '../../network/writer/ChannelSelector.js';
import type { ManagedMemory } from './ManagedMemory.js';
import { emitEach, type RecordSink } from './RecordSink.js';
import { ARRAY32, ARRAY_HEADER_BYTES, recordPackr, recordUnpackr, removeSpillFile, SpillReader, type SpillFile } from './SpillFile.js';

/**
 * What a held record costs beside its packed bytes: its key slot (8), where it is (8),
 * its length (4), its place in the sort order (4), and room for the arrays to grow (8).
 */
const ENTRY_BYTES = 32;
/** A string key's cost beside its UTF-16 code units: V8's string header, rounded up. */
const STRING_KEY_BYTES = 24;
/** Packed records are held in chunks of up to this size (a larger record gets a chunk of its own). */
const MAX_CHUNK_BYTES = 1 << 20;
/** At most this many runs are merged at once: each open run holds a read buffer and one decoded block. */
export const MAX_MERGE_FAN_IN = 64;

/** How a sort compares two held records, by the kind of keys its run has. */
type KeyKind = 'number' | 'string' | 'mixed';

/**
 * An external merge sort (Flink's UnilateralSortMerger, in one thread): records are
 * held packed (msgpackr) with their keys beside them; when they would outgrow the
 * budget they are sorted and written to a run file; at the end the runs are merged
 * k-way (in passes of MAX_MERGE_FAN_IN) into the output. The order is `naturalOrder`
 * of the keys and stable: equal keys keep their input order (within a run by
 * position, across runs by run). Runs whose keys are all numbers or all strings sort
 * on their keys alone, never decoding a record. Written independent of its callers so
 * that another sort buffer (a sort-merge partition's) could share it.
 */
export class ExternalSorter {
  private readonly packr = recordPackr();
  private readonly unpackr: Unpackr = recordUnpackr();
  private readonly chunkBytes: number;
  private readonly blockBytes: number;
  private chunks: Buffer[] = [];
  private position = 0;
  private keys: unknown[] = [];
  /** chunk index * 2^32 + offset of each held record. */
  private places: number[] = [];
  private lengths: number[] = [];
  private kind: KeyKind | null = null;
  private used = 0;
  private runs: SpillFile[] = [];
  /** Runs written so far (merge passes not counted). */
  spilledRuns = 0;

  constructor(
    private readonly key: KeyFn,
    /** The budget, bytes. */
    private readonly budget: number,
    private readonly memory: ManagedMemory,
  ) {
    this.chunkBytes = Math.max(256, Math.min(MAX_CHUNK_BYTES, Math.floor(budget / 4)));
    // A merge holds a read buffer and a decoded block (several times its bytes) per run.
    this.blockBytes = Math.max(4096, Math.min(MAX_CHUNK_BYTES, Math.floor(budget / (8 * MAX_MERGE_FAN_IN))));
  }

  /** Adds a record; it is packed at once and not kept. A run is written first if the record would pass the budget. */
  push(record: unknown): void {
    const key = this.key(record);
    const packed = this.packr.pack(record);
    const length = packed.length;
    const entry = ENTRY_BYTES + keyBytes(key);
    // Chunks count as allocated; an entry for its key and place.
    let fits = this.position + length <= (this.chunks.at(-1)?.length ?? 0);
    if (this.used + entry + (fits ? 0 : Math.max(this.chunkBytes, length)) > this.budget && this.keys.length > 0) {
      this.spillRun();
      fits = false;
    }
    if (!fits) {
      const size = Math.max(this.chunkBytes, length);
      this.chunks.push(Buffer.allocUnsafe(size));
      this.position = 0;
      this.used += size;
    }
    const chunk = this.chunks.length - 1;
    this.chunks[chunk].set(packed, this.position);
    this.places.push(chunk * 2 ** 32 + this.position);
    this.lengths.push(length);
    this.keys.push(key);
    this.position += length;
    this.used += entry;
    this.kind = kindWith(this.kind, key);
  }

  /** Passes every record to `emit` in order, waiting where it has to; the sorter is empty afterwards. */
  async finish(emit: RecordSink): Promise<void> {
    if (this.runs.length === 0) return emitEach(this.heldRecords(), emit, this.memory.checkpoint);
    if (this.keys.length > 0) this.spillRun();
    while (this.runs.length > MAX_MERGE_FAN_IN) this.mergePass();
    const runs = this.runs;
    this.runs = [];
    await emitEach(mergedRecords(runs, this.key), emit, this.memory.checkpoint);
  }

  /** The held records in sorted order, as positions into the held arrays. */
  private sortedOrder(): Uint32Array {
    const n = this.keys.length;
    if (this.kind === 'number') {
      const order = integerOrder(this.keys as number[]);
      if (order !== null) return order;
    }
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    // Ties fall back to the position: stable whatever the sort algorithm.
    if (this.kind === 'number') {
      const keys = Float64Array.from(this.keys as number[]);
      order.sort((a, b) => keys[a] - keys[b] || a - b);
    } else if (this.kind === 'string') {
      const keys = this.keys as string[];
      order.sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b));
    } else {
      const keys = this.keys;
      order.sort((a, b) => naturalOrder(keys[a], keys[b]) || a - b);
    }
    return order;
  }

  /**
   * The held records in order, the sorted bytes copied into a block as a spill run
   * would be and the block decoded in one call (per record, decoding costs twice as
   * much). The sorter is empty afterwards.
   */
  private *heldRecords(): Generator<unknown> {
    const order = this.sortedOrder();
    const { chunks, places, lengths, unpackr } = this;
    this.keys = [];
    let block = Buffer.allocUnsafe(this.blockBytes);
    let position = ARRAY_HEADER_BYTES;
    let from = 0;
    const decode = (to: number): unknown[] => {
      block[0] = ARRAY32;
      block.writeUInt32BE(to - from, 1);
      from = to;
      const records = unpackr.unpack(block.subarray(0, position)) as unknown[];
      position = ARRAY_HEADER_BYTES;
      return records;
    };
    for (let i = 0; i < order.length; i++) {
      const length = lengths[order[i]];
      if (position + length > block.length) {
        if (i > from) yield* decode(i);
        if (ARRAY_HEADER_BYTES + length > block.length) block = Buffer.allocUnsafe(ARRAY_HEADER_BYTES + length);
      }
      const place = places[order[i]];
      const start = place % 2 ** 32;
      chunks[Math.floor(place / 2 ** 32)].copy(block, position, start, start + length);
      position += length;
    }
    if (order.length > from) yield* decode(order.length);
    this.clear();
  }

  /** Sorts what is held and writes it as a run, in order: record bytes are copied, never decoded. */
  private spillRun(): void {
    const order = this.sortedOrder();
    const writer = this.memory.newSpillWriter('sort-run', this.blockBytes);
    try {
      const { chunks, places, lengths } = this;
      for (let i = 0; i < order.length; i++) {
        const place = places[order[i]];
        const start = place % 2 ** 32;
        writer.addPacked(chunks[Math.floor(place / 2 ** 32)], start, start + lengths[order[i]]);
      }
      this.runs.push(writer.close());
    } catch (error) {
      writer.abort();
      throw error;
    }
    this.spilledRuns++;
    this.clear();
  }

  /** Merges runs MAX_MERGE_FAN_IN at a time, consecutive ones together, so that stability holds. */
  private mergePass(): void {
    const merged: SpillFile[] = [];
    for (let from = 0; from < this.runs.length; from += MAX_MERGE_FAN_IN) {
      const group = this.runs.slice(from, from + MAX_MERGE_FAN_IN);
      if (group.length === 1) {
        merged.push(group[0]);
        continue;
      }
      const writer = this.memory.newSpillWriter('sort-run', this.blockBytes);
      try {
        mergeSync(group, this.key, (r) => writer.add(r));
        merged.push(writer.close());
      } catch (error) {
        writer.abort();
        throw error;
      }
    }
    this.runs = merged;
  }

  private clear(): void {
    this.chunks = [];
    this.position = 0;
    this.keys = [];
    this.places = [];
    this.lengths = [];
    this.kind = null;
    this.used = 0;
  }
}

/**
 * The order of integer keys without a comparator (several times faster than one): each
 * key and its position made one unsigned 64-bit number, key above position, sorted
 * natively; or, where keys span 2^32 or more, one double, (key - min) * n + position.
 * Null where neither is exact.
 */
function integerOrder(keys: readonly number[]): Uint32Array | null {
  const n = keys.length;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const k = keys[i];
    if (!Number.isInteger(k)) return null;
    if (k < min) min = k;
    if (k > max) max = k;
  }
  const order = new Uint32Array(n);
  if (max - min < 2 ** 32 && LITTLE_ENDIAN) {
    const pairs = new BigUint64Array(n);
    // Written as 32-bit halves: no bigint is made per key.
    const words = new Uint32Array(pairs.buffer);
    for (let i = 0; i < n; i++) {
      words[2 * i] = i;
      words[2 * i + 1] = keys[i] - min;
    }
    pairs.sort();
    for (let i = 0; i < n; i++) order[i] = words[2 * i];
    return order;
  }
  if ((max - min + 1) * n > Number.MAX_SAFE_INTEGER) return null;
  const composite = new Float64Array(n);
  for (let i = 0; i < n; i++) composite[i] = (keys[i] - min) * n + i;
  composite.sort();
  for (let i = 0; i < n; i++) order[i] = composite[i] % n;
  return order;
}

/** The low half of a 64-bit word comes first in memory. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function keyBytes(key: unknown): number {
  return typeof key === 'string' ? STRING_KEY_BYTES + 2 * key.length : 0;
}

function kindWith(kind: KeyKind | null, key: unknown): KeyKind {
  const own: KeyKind = typeof key === 'number' ? 'number' : typeof key === 'string' ? 'string' : 'mixed';
  return kind === null || kind === own ? own : 'mixed';
}

/** One run being merged: its reader, its current block and the key of its head record. */
interface Cursor {
  reader: SpillReader;
  file: SpillFile;
  block: unknown[];
  index: number;
  key: unknown;
  run: number;
}

/**
 * The records of sorted runs, merged: a heap of one cursor per run, ordered by the
 * head's key and then the run, so equal keys come out in run order (stable). Each run
 * file is removed once read to its end.
 */
function* mergedRecords(runs: readonly SpillFile[], key: KeyFn): Generator<unknown> {
  const heap = new CursorHeap();
  const open: Cursor[] = [];
  try {
    runs.forEach((file, run) => {
      const reader = new SpillReader(file);
      const cursor: Cursor = { reader, file, block: [], index: 0, key: undefined, run };
      open.push(cursor);
      if (advanceBlock(cursor, key)) heap.push(cursor);
    });
    while (heap.size > 0) {
      const cursor = heap.top;
      yield cursor.block[cursor.index];
      if (++cursor.index < cursor.block.length || advanceBlock(cursor, key)) {
        cursor.key = key(cursor.block[cursor.index]);
        heap.update();
      } else heap.pop();
    }
  } finally {
    for (const cursor of open) {
      cursor.reader.close();
      removeSpillFile(cursor.file);
    }
  }
}

/** Loads the cursor's next block; false at the end of its run. */
function advanceBlock(cursor: Cursor, key: KeyFn): boolean {
  for (;;) {
    const block = cursor.reader.next();
    if (block === null) return false;
    if (block.length === 0) continue;
    cursor.block = block;
    cursor.index = 0;
    cursor.key = key(block[0]);
    return true;
  }
}

/** Merges runs into a writer: a pass of a merge with more runs than MAX_MERGE_FAN_IN. */
function mergeSync(runs: readonly SpillFile[], key: KeyFn, add: (record: unknown) => void): void {
  for (const record of mergedRecords(runs, key)) add(record);
}

/** A binary min-heap of cursors by (head key, run). */
class CursorHeap {
  private readonly items: Cursor[] = [];

  get size(): number {
    return this.items.length;
  }

  get top(): Cursor {
    return this.items[0];
  }

  push(cursor: Cursor): void {
    const items = this.items;
    let i = items.push(cursor) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(cursor, items[parent])) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = cursor;
  }

  /** The top's key changed: moves it down to its place. */
  update(): void {
    this.siftDown(this.items[0]);
  }

  /** Removes the top. */
  pop(): void {
    const last = this.items.pop()!;
    if (this.items.length > 0) this.siftDown(last);
  }

  /** Puts `cursor` at the root and moves it down to its place. */
  private siftDown(cursor: Cursor): void {
    const items = this.items;
    const n = items.length;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && before(items[child + 1], items[child])) child++;
      if (!before(items[child], cursor)) break;
      items[i] = items[child];
      i = child;
    }
    items[i] = cursor;
  }
}

function before(a: Cursor, b: Cursor): boolean {
  const c = naturalOrder(a.key, b.key);
  return c < 0 || (c === 0 && a.run < b.run);
}

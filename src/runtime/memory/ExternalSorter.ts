import type { KeyFn } from '../../job/KeyFn.js';
import { copyBytes } from '../../network/buffer/Bytes.js';
import { naturalOrder } from '../../keys/KeyOrder.js';
import { flatSize, packFlat } from './FlatRecords.js';
import { HeldEntries } from './HeldEntries.js';
import type { ManagedMemory } from './ManagedMemory.js';
import { emitEach, type RecordSink } from './RecordSink.js';
import { ARRAY32, ARRAY_HEADER_BYTES, recordPackr, recordUnpackr, removeSpillFile, SpillReader, type SpillFile } from './SpillFile.js';

/**
 * What a held record costs beside its packed bytes and its slot in HeldEntries' pages
 * (counted as pages are made), when its run is sorted: its key in the array sorted by
 * (8), its place in the sort order (4), and the key and position made one (8).
 */
const ENTRY_BYTES = 20;
/** A string key's cost beside its UTF-16 code units: V8's string header, rounded up. */
const STRING_KEY_BYTES = 24;
/** Packed records are held in chunks of up to this size (a larger record gets a chunk of its own). */
const MAX_CHUNK_BYTES = 1 << 20;
/** At most this many runs are merged at once: each open run holds a read buffer and one decoded block. */
export const MAX_MERGE_FAN_IN = 64;

/** A block's records decoded cost about this many times its packed bytes in the heap (a [number, string] record of 16 bytes: about 90). */
const DECODED_BYTES_PER_BYTE = 6;

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
  private readonly unpackr = recordUnpackr();
  private readonly chunkBytes: number;
  private readonly blockBytes: number;
  private chunks: Buffer[] = [];
  private position = 0;
  /** A page of held entries is at most a sixteenth of the budget: 2^pageShift entries. */
  private readonly pageShift: number;
  private entries: HeldEntries;
  private kind: KeyKind | null = null;
  private used = 0;
  private runs: SpillFile[] = [];
  /** Runs written so far (merge passes not counted). */
  spilledRuns = 0;
  /**
   * A merge is done with a block: its decoded records, kept while the other runs'
   * records came out, were promoted to V8's old generation, which grows lazily; let go
   * of, they count as released, so that the heap is collected now and then.
   */
  private readonly blockDone = (): void => this.memory.released(this.blockBytes * DECODED_BYTES_PER_BYTE);

  constructor(
    private readonly key: KeyFn,
    /** The budget, bytes. */
    private readonly budget: number,
    private readonly memory: ManagedMemory,
  ) {
    this.chunkBytes = Math.max(256, Math.min(MAX_CHUNK_BYTES, Math.floor(budget / 4)));
    // A merge holds a read buffer and a decoded block (several times its bytes) per run.
    this.blockBytes = Math.max(4096, Math.min(MAX_CHUNK_BYTES, Math.floor(budget / (8 * MAX_MERGE_FAN_IN))));
    this.pageShift = Math.max(6, Math.min(16, Math.floor(Math.log2(budget / HeldEntries.SLOT_BYTES / 16))));
    this.entries = new HeldEntries(this.pageShift);
  }

  /** Adds a record; it is packed at once (a flat one straight into its chunk) and not kept. A run is written first if the record would pass the budget. */
  push(record: unknown): void {
    const key = this.key(record);
    const flat = flatSize(record);
    const packed = flat < 0 ? this.packr.pack(record) : null;
    const length = packed === null ? flat : packed.length;
    const entry = ENTRY_BYTES + keyBytes(key);
    // Chunks and pages count as allocated; an entry for what sorting it takes.
    let fits = this.position + length <= (this.chunks.at(-1)?.length ?? 0);
    const page = this.entries.full ? this.entries.pageBytes : 0;
    if (this.used + entry + page + (fits ? 0 : Math.max(this.chunkBytes, length)) > this.budget && this.entries.count > 0) {
      this.spillRun();
      fits = false;
    }
    if (this.entries.full) this.used += this.entries.pageBytes;
    if (!fits) {
      const size = Math.max(this.chunkBytes, length);
      this.chunks.push(Buffer.allocUnsafe(size));
      this.position = 0;
      this.used += size;
    }
    const chunk = this.chunks.length - 1;
    if (packed === null) packFlat(record, this.chunks[chunk], this.position);
    else this.chunks[chunk].set(packed, this.position);
    this.entries.push(key, chunk * 2 ** 32 + this.position, length);
    this.position += length;
    this.used += entry;
    this.kind = kindWith(this.kind, key);
  }

  /** Passes every record to `emit` in order, waiting where it has to; the sorter is empty afterwards. */
  async finish(emit: RecordSink): Promise<void> {
    if (this.runs.length === 0) return emitEach(this.heldRecords(), emit, this.memory.checkpoint);
    if (this.entries.count > 0) this.spillRun();
    while (this.runs.length > MAX_MERGE_FAN_IN) this.mergePass();
    const runs = this.runs;
    this.runs = [];
    await emitEach(mergedRecords(runs, this.key, this.blockDone), emit, this.memory.checkpoint);
  }

  /** The held records in sorted order, as positions into the held arrays. */
  private sortedOrder(): Uint32Array {
    const n = this.entries.count;
    const numbers = this.kind === 'number' ? this.entries.numberKeys() : null;
    if (numbers !== null) {
      const order = integerOrder(numbers);
      if (order !== null) return order;
    }
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    // Ties fall back to the position: stable whatever the sort algorithm.
    if (numbers !== null) order.sort((a, b) => numbers[a] - numbers[b] || a - b);
    else if (this.kind === 'string') {
      const keys = this.entries.keys() as string[];
      order.sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b));
    } else {
      const keys = this.entries.keys();
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
    const { chunks, entries, unpackr } = this;
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
      const length = entries.lengthAt(order[i]);
      if (position + length > block.length) {
        if (i > from) yield* decode(i);
        if (ARRAY_HEADER_BYTES + length > block.length) block = Buffer.allocUnsafe(ARRAY_HEADER_BYTES + length);
      }
      const place = entries.placeAt(order[i]);
      copyBytes(chunks[Math.floor(place / 2 ** 32)], place % 2 ** 32, block, position, length);
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
      const { chunks, entries } = this;
      for (let i = 0; i < order.length; i++) {
        const place = entries.placeAt(order[i]);
        const start = place % 2 ** 32;
        writer.addPacked(chunks[Math.floor(place / 2 ** 32)], start, start + entries.lengthAt(order[i]));
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
        for (const record of mergedRecords(group, this.key, this.blockDone)) writer.add(record);
        merged.push(writer.close());
      } catch (error) {
        writer.abort();
        throw error;
      }
    }
    this.runs = merged;
  }

  /** Lets go of the held records (their chunks and their entries). */
  private clear(): void {
    this.memory.released(this.used);
    this.chunks = [];
    this.position = 0;
    this.entries = new HeldEntries(this.pageShift);
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
function integerOrder(keys: Float64Array): Uint32Array | null {
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
function* mergedRecords(runs: readonly SpillFile[], key: KeyFn, blockDone: () => void): Generator<unknown> {
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
      if (++cursor.index < cursor.block.length) cursor.key = key(cursor.block[cursor.index]);
      else {
        blockDone();
        if (!advanceBlock(cursor, key)) {
          heap.pop();
          continue;
        }
      }
      heap.update();
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

import type { KeyFn } from '../../job/KeyFn.js';
import { stateKey } from '../state/KeyedState.js';
import { foldPartitions, MAX_SPILL_DEPTH, SPILL_PARTITIONS, spillPartition } from './KeyPartitions.js';
import { packedSize } from './FlatRecords.js';
import { HEAP_OBJECT_FACTOR, type ManagedMemory } from './ManagedMemory.js';
import { emitEach, type RecordSink } from './RecordSink.js';
import { recordPackr, SpillWriter } from './SpillFile.js';

/**
 * What a key held in the table costs beside its record's packed bytes: the Map entry
 * and the record's object headers (measured on V8: about 95 bytes for a [number, number]
 * record, 115 for one with a short string).
 */
const TABLE_ENTRY_BYTES = 104;

/**
 * Keyed aggregation within a budget, as Flink's and Spark's spilling hash aggregation:
 * one record per key, folded with `reduce`, in a table counted as packed bytes. When
 * the table outgrows the budget its records are written to SPILL_PARTITIONS partition
 * files by a hash of their key and the table starts afresh; at the end each partition
 * is aggregated on its own (a partition that still does not fit is split again, with
 * another hash, up to MAX_SPILL_DEPTH levels). `reduce` must be associative and
 * commutative, as a reduce-side aggregation's is; it may fold into its first argument
 * and return it, when the records are the engine's own.
 */
export class SpillingAggregator {
  private table = new Map<unknown, unknown>();
  private used = 0;
  /** The budget less the blocks of the partition writers, which are held from the first spill on. */
  private readonly tableBudget: number;
  private writers: SpillWriter[] | null = null;
  private readonly packr = recordPackr();
  /** Times the table was written out, and the deepest level of repartitioning used (for tests). */
  spills = 0;
  deepest = 0;

  constructor(
    private readonly key: KeyFn,
    private readonly reduce: (a: unknown, b: unknown) => unknown,
    private readonly budget: number,
    private readonly memory: ManagedMemory,
    private readonly depth = 0,
  ) {
    this.tableBudget = tableBudget(budget, SPILL_PARTITIONS);
  }

  push(record: unknown): void {
    // A composite key (an array, an object) by its JSON: the same key comes as a new object each record.
    const k = stateKey(this.key(record));
    const old = this.table.get(k);
    if (old !== undefined) {
      // A fold into the record held (a combiner's pair) needs no second look-up.
      const folded = this.reduce(old, record);
      if (folded !== old) this.table.set(k, folded);
      return;
    }
    this.table.set(k, record);
    // A key is counted when it comes in; its folds keep about its size.
    this.used += (packedSize(record, this.packr) + TABLE_ENTRY_BYTES) * HEAP_OBJECT_FACTOR;
    if (this.used > this.tableBudget && this.depth < MAX_SPILL_DEPTH) this.spill();
  }

  /** Emits one record per key, waiting where `emit` has to; spill files are removed as they are read. */
  async finish(emit: RecordSink): Promise<void> {
    if (this.writers === null) {
      await emitEach(this.table.values(), emit, this.memory.checkpoint);
      this.table.clear();
      this.memory.released(this.used);
      this.used = 0;
      return;
    }
    this.spill();
    const writers = this.writers;
    this.writers = null;
    const deepest = await foldPartitions(writers, () => new SpillingAggregator(this.key, this.reduce, this.budget, this.memory, this.depth + 1), emit, this.memory.checkpoint);
    if (deepest !== null) this.deepest = Math.max(this.deepest, deepest, this.depth + 1);
  }

  /** Writes the table to the partition files and empties it. */
  private spill(): void {
    this.writers ??= Array.from({ length: SPILL_PARTITIONS }, () => this.memory.newSpillWriter('aggregate', writerBlockBytes(this.budget, SPILL_PARTITIONS), this.packr));
    const writers = this.writers;
    for (const [k, record] of this.table) writers[spillPartition(k, this.depth)].add(record);
    this.table = new Map();
    this.memory.released(this.used);
    this.used = 0;
    this.spills++;
  }
}

/** The block size of each of `writers` open spill writers: together they hold an eighth of the budget at most. */
export function writerBlockBytes(budget: number, writers: number): number {
  return Math.max(4096, Math.min(1 << 20, Math.floor(budget / (8 * writers))));
}

/**
 * What is left of a budget for a hash table beside the blocks of `writers` spill
 * writers: seven eighths, or half where the blocks' floor of 4 KiB each would take more
 * (budgets of a few KiB, in tests).
 */
export function tableBudget(budget: number, writers: number): number {
  return Math.max(budget / 2, budget - writers * writerBlockBytes(budget, writers));
}


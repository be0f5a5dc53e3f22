import type { KeyFn } from '../../job/KeyFn.js';
import { stateKey } from '../state/KeyedState.js';
import { MAX_SPILL_DEPTH, SPILL_PARTITIONS, spillPartition } from './KeyPartitions.js';
import { packedSize } from './FlatRecords.js';
import { HEAP_OBJECT_FACTOR, type ManagedMemory } from './ManagedMemory.js';
import { emitEach, pause, type RecordSink } from './RecordSink.js';
import { recordPackr, removeSpillFile, spilledRecords, SpillWriter, type SpillFile } from './SpillFile.js';
import { tableBudget, writerBlockBytes } from './SpillingAggregator.js';

/**
 * What a build record costs beside its packed bytes: its object headers and its slot
 * in its key's list, and the key's Map entry and list (measured on V8: about 175 bytes
 * for a [number, string] record with a key of its own).
 */
const BUILD_ENTRY_BYTES = 160;

export interface JoinSpec {
  /** The build side's key and the probe side's. */
  keys: [KeyFn, KeyFn];
  combine: (build: unknown, probe: unknown) => unknown;
}

/** One hash partition of the build side: in memory until it is spilled, then on disk with its probe records. */
interface Partition {
  table: Map<unknown, unknown[]> | null;
  bytes: number;
  build: SpillWriter | null;
  probe: SpillWriter | null;
}

/**
 * A hybrid hash join (Flink's MutableHashTable, Grace hash join with the partitions
 * that fit kept in memory): build records go to SPILL_PARTITIONS partitions by a hash
 * of their key; when they outgrow the budget the largest partition in memory is
 * written to disk, and from then on its build records, and the probe records that
 * fall in it, go to its files. Probe records of partitions in memory are joined at
 * once. At the end each spilled partition is joined on its own, repartitioned with
 * another hash where it still does not fit (skew), and past MAX_SPILL_DEPTH levels
 * (one key with more records than the budget) joined block by block: as much of the
 * build side as fits, against the whole probe side each time.
 *
 * A probe record's matches come out in build order.
 */
export class HybridHashJoin {
  private readonly partitions: Partition[];
  private readonly packr = recordPackr();
  private used = 0;
  /** The budget less the blocks of the build and probe writers of spilled partitions. */
  private readonly tableBudget: number;
  /** Partitions written to disk at this level, and the deepest level of repartitioning used (for tests). */
  spilledPartitions = 0;
  deepest = 0;

  constructor(
    private readonly spec: JoinSpec,
    private readonly budget: number,
    private readonly memory: ManagedMemory,
    private readonly depth = 0,
  ) {
    this.tableBudget = tableBudget(budget, 2 * SPILL_PARTITIONS);
    this.partitions = Array.from({ length: SPILL_PARTITIONS }, () => ({ table: new Map(), bytes: 0, build: null, probe: null }));
  }

  /** Adds a record of the build side; all come before the first probe. */
  build(record: unknown): void {
    const key = this.spec.keys[0](record);
    const partition = this.partitions[spillPartition(key, this.depth)];
    if (partition.table === null) {
      partition.build!.add(record);
      return;
    }
    // A composite key (an array, an object) by its JSON: the same key comes as a new object each record.
    const mapKey = stateKey(key);
    const list = partition.table.get(mapKey);
    if (list) list.push(record);
    else partition.table.set(mapKey, [record]);
    const cost = (packedSize(record, this.packr) + BUILD_ENTRY_BYTES) * HEAP_OBJECT_FACTOR;
    partition.bytes += cost;
    this.used += cost;
    while (this.used > this.tableBudget && this.spillLargest());
  }

  /** Joins a record of the probe side with the build records in memory, or keeps it for its spilled partition. */
  probe(record: unknown, emit: RecordSink): void | Promise<void> {
    const key = this.spec.keys[1](record);
    const partition = this.partitions[spillPartition(key, this.depth)];
    if (partition.table === null) {
      partition.probe ??= this.writer('join-probe');
      partition.probe.add(record);
      return;
    }
    const matches = partition.table.get(stateKey(key));
    if (matches === undefined) return;
    const combine = this.spec.combine;
    if (matches.length === 1) return emit(combine(matches[0], record));
    return emitEach(
      matches.map((m) => combine(m, record)),
      emit,
      this.memory.checkpoint,
    );
  }

  /** Joins the spilled partitions, one at a time; their files are removed as they are read. */
  async finish(emit: RecordSink): Promise<void> {
    for (const partition of this.partitions) partition.table = null;
    this.memory.released(this.used);
    this.used = 0;
    for (const partition of this.partitions) {
      if (partition.build === null) continue;
      const build = partition.build.close();
      const probe = partition.probe?.close() ?? null;
      partition.build = partition.probe = null;
      if (probe === null || build.records === 0) {
        removeSpillFile(build);
        if (probe) removeSpillFile(probe);
        continue;
      }
      if (this.depth < MAX_SPILL_DEPTH) await this.joinSpilled(build, probe, emit);
      else await this.joinBlockwise(build, probe, emit);
    }
  }

  /** A spilled partition joined as a join of its own, one level down. */
  private async joinSpilled(build: SpillFile, probe: SpillFile, emit: RecordSink): Promise<void> {
    const inner = new HybridHashJoin(this.spec, this.budget, this.memory, this.depth + 1);
    for (const block of spilledRecords(build)) {
      for (const record of block) inner.build(record);
      await pause(this.memory.checkpoint);
    }
    removeSpillFile(build);
    for (const block of spilledRecords(probe)) {
      for (const record of block) {
        const waiting = inner.probe(record, emit);
        if (waiting) await waiting;
      }
      await pause(this.memory.checkpoint);
    }
    removeSpillFile(probe);
    await inner.finish(emit);
    this.deepest = Math.max(this.deepest, inner.deepest, this.depth + 1);
  }

  /**
   * The last resort for a partition that hashing cannot split: as many build records
   * as the budget holds at a time, each such block joined with every probe record.
   */
  private async joinBlockwise(build: SpillFile, probe: SpillFile, emit: RecordSink): Promise<void> {
    const [buildKey, probeKey] = this.spec.keys;
    let table = new Map<unknown, unknown[]>();
    let bytes = 0;
    const joinBlock = async (): Promise<void> => {
      for (const block of spilledRecords(probe)) {
        for (const record of block) {
          const matches = table.get(stateKey(probeKey(record)));
          if (matches) await emitEach(matches.map((m) => this.spec.combine(m, record)), emit, this.memory.checkpoint);
        }
        await pause(this.memory.checkpoint);
      }
      table = new Map();
      this.memory.released(bytes);
      bytes = 0;
    };
    for (const block of spilledRecords(build)) {
      for (const record of block) {
        const key = stateKey(buildKey(record));
        const list = table.get(key);
        if (list) list.push(record);
        else table.set(key, [record]);
        bytes += (packedSize(record, this.packr) + BUILD_ENTRY_BYTES) * HEAP_OBJECT_FACTOR;
        if (bytes > this.tableBudget) await joinBlock();
      }
    }
    if (table.size > 0) await joinBlock();
    removeSpillFile(build);
    removeSpillFile(probe);
  }

  /** Writes the largest partition in memory to disk; false if none is left in memory. */
  private spillLargest(): boolean {
    let largest: Partition | null = null;
    for (const partition of this.partitions) if (partition.table !== null && (largest === null || partition.bytes > largest.bytes)) largest = partition;
    if (largest === null || largest.table === null) return false;
    const writer = this.writer('join-build');
    for (const list of largest.table.values()) for (const record of list) writer.add(record);
    largest.table = null;
    largest.build = writer;
    this.memory.released(largest.bytes);
    this.used -= largest.bytes;
    largest.bytes = 0;
    this.spilledPartitions++;
    return true;
  }

  private writer(kind: string): SpillWriter {
    return this.memory.newSpillWriter(kind, writerBlockBytes(this.budget, 2 * SPILL_PARTITIONS), this.packr);
  }
}

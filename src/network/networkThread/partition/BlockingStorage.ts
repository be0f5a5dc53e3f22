import fs from 'node:fs';
import path from 'node:path';
import type { PartitionContext } from './PartitionType.js';
import { SpillableSubpartition } from './SpillableSubpartition.js';
import { SubpartitionedStorage } from './SubpartitionedStorage.js';
import { SpillwayError } from '../../../errors/Errors.js';

/**
 * The `blocking` type's storage: a SpillableSubpartition per consumer, kept in memory
 * within the partition's budget and spilled to a file of its own past it (one file
 * per subpartition: the hash shuffle that sort-merge replaces at high fan-out).
 */
export class BlockingStorage extends SubpartitionedStorage<SpillableSubpartition> {
  private memoryInUse = 0;
  private readonly memoryBudget: number;

  constructor(context: PartitionContext) {
    const subpartitions: SpillableSubpartition[] = [];
    super(subpartitions);
    if (context.spillDir === '') throw new SpillwayError('SPW_ERR_CONFIG', `blocking partition ${context.id} needs a spill directory`);
    this.memoryBudget = context.config.memoryBudget;
    const made = { dir: false };
    for (let i = 0; i < context.numSubpartitions; i++) {
      const file = path.join(context.spillDir, `${i}.spill`);
      const name = `subpartition ${i} of partition ${context.id}`;
      const spillPath = (): string => {
        if (!made.dir) fs.mkdirSync(context.spillDir, { recursive: true });
        made.dir = true;
        return file;
      };
      subpartitions.push(new SpillableSubpartition(i, name, spillPath, context.pool, (delta) => this.accountMemory(delta), context.numSubpartitions));
    }
  }

  override get bytesOnDisk(): number {
    return this.subpartitions.reduce((sum, s) => sum + s.bytesOnDisk, 0);
  }

  override finish(): Promise<void> {
    // Reading a spilled subpartition takes buffers of this pool: none may stay kept in memory then,
    // since network memory is shared and the pool may be held to its minimum by the time consumers read.
    if (this.subpartitions.some((s) => s.isSpilled)) for (const s of this.subpartitions) s.spill();
    return super.finish();
  }

  /**
   * Buffers kept in memory come back only through the disk, and the pool may never
   * reach the maximum the budget was sized for (network memory is shared): the runs
   * spilled subpartitions gather are written now, and unless a spill write is under way,
   * which will return buffers, the largest subpartition held in memory is spilled.
   */
  override onPoolExhausted(): void {
    if (!this.subpartitions.some((s) => s.isWriting)) this.spillLargest();
    for (const s of this.subpartitions) if (s.isSpilled) s.flushWrites();
  }

  /** Keeps the in-memory bytes within budget by spilling the largest subpartitions. */
  private accountMemory(delta: number): void {
    this.memoryInUse += delta;
    while (this.memoryInUse > this.memoryBudget && this.spillLargest());
  }

  /** Spills the subpartition with the most bytes in memory; false if none holds any. */
  private spillLargest(): boolean {
    let largest: SpillableSubpartition | null = null;
    for (const s of this.subpartitions) {
      if (!s.isSpilled && s.bytesInMemory > 0 && (largest === null || s.bytesInMemory > largest.bytesInMemory)) largest = s;
    }
    largest?.spill();
    return largest !== null;
  }
}

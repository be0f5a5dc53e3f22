import { foldPartitions, levelSalt, MAX_SPILL_DEPTH, SPILL_PARTITIONS, type SpillingFold } from '../../../runtime/memory/KeyPartitions.js';
import type { OperatorMemory } from '../../../runtime/memory/OperatorMemory.js';
import { emitEach, type RecordSink } from '../../../runtime/memory/RecordSink.js';
import type { SpillOutput } from '../../../runtime/memory/OperatorMemory.js';
import { tableBudget, writerBlockBytes } from '../../../runtime/memory/SpillingAggregator.js';
import { WordCounter, type WordCountGroup, type WordCountRecord } from './WordCounter.js';

/**
 * The word count's keyed fold (a `fold` operator): adds up word counts that arrive packed in groups
 * ([group, packed], WordCounter.groupedCounts) in one WordCounter, byte range by byte
 * range, and emits [word, count] per distinct word at the end, a string made for each
 * only then. Within a budget, as SpillingAggregator is: past it the counter's counts
 * go, packed again, to SPILL_PARTITIONS partition files by a salted hash of each
 * word's bytes, and the counter starts afresh; at the end each partition is added up
 * on its own (split again, with another salt, up to MAX_SPILL_DEPTH levels).
 */
export class WordCountMerger implements SpillingFold<WordCountGroup, WordCountRecord> {
  private readonly counter = new WordCounter();
  /** The budget less the blocks of the partition writers, which are held from the first spill on. */
  private readonly tableBudget: number;
  private writers: SpillOutput[] | null = null;
  /** Times the counter was written out, and the deepest level of repartitioning used (for tests). */
  spills = 0;
  deepest = 0;

  private readonly budget: number;

  constructor(
    private readonly memory: OperatorMemory,
    private readonly depth = 0,
  ) {
    this.budget = memory.operatorBudget;
    this.tableBudget = tableBudget(this.budget, SPILL_PARTITIONS);
  }

  push(record: WordCountGroup): void {
    this.counter.addCounts(record[1]);
    if (this.counter.heldBytes > this.tableBudget && this.depth < MAX_SPILL_DEPTH) this.spill();
  }

  /** Emits [word, count] per distinct word, waiting where `emit` has to; spill files are removed as they are read. */
  async finish(emit: RecordSink<WordCountRecord>): Promise<void> {
    if (this.writers === null) {
      await emitEach(this.counter.entries(), emit, this.memory.checkpoint);
      this.counter.clear();
      return;
    }
    this.spill();
    const writers = this.writers;
    this.writers = null;
    const deepest = await foldPartitions(writers, () => new WordCountMerger(this.memory, this.depth + 1), emit, this.memory.checkpoint);
    if (deepest !== null) this.deepest = Math.max(this.deepest, deepest, this.depth + 1);
  }

  /** Writes the counts to the partition files and empties the counter. */
  private spill(): void {
    this.writers ??= Array.from({ length: SPILL_PARTITIONS }, () => this.memory.newSpillWriter('wordcount', writerBlockBytes(this.budget, SPILL_PARTITIONS)));
    const writers = this.writers;
    // Salted by level, so a partition splits anew one level down, and apart from the exchange's groups.
    for (const group of this.counter.groupedCounts(SPILL_PARTITIONS, levelSalt(this.depth))) writers[group[0]].add(group);
    this.counter.clear();
    this.spills++;
  }
}

import { BlockingStorage } from './BlockingStorage.js';
import { HybridResultPartition } from './HybridResultPartition.js';
import type { PartitionConfig, PartitionType } from './PartitionType.js';
import { PipelinedSubpartition } from './PipelinedSubpartition.js';
import { SortMergeResultPartition } from './SortMergeResultPartition.js';
import { SubpartitionedStorage } from './SubpartitionedStorage.js';

/** A pool that can hold every subpartition's buffer being filled, plus one, and keep `budget` bytes beside them. */
function budgetPool(numSubpartitions: number, config: PartitionConfig): { min: number; max: number } {
  const min = numSubpartitions + 1;
  return { min, max: min + Math.ceil(config.memoryBudget / config.segmentSize) };
}

/** Streaming: a bounded queue per consumer, read while produced, once; a slow consumer stops its producer. */
export const PIPELINED: PartitionType = {
  name: 'pipelined',
  isPipelined: true,
  isReReadable: false,
  isCompressible: false,
  storage: 'memory: a bounded queue per subpartition',
  poolSize: (n, config) => ({ min: n + 1, max: n * config.buffersPerSubpartition + 1 }),
  createStorage: (context) => {
    let consumed = 0;
    const onConsumed = (): void => {
      if (++consumed === context.numSubpartitions) context.consumed();
    };
    return new SubpartitionedStorage(
      Array.from({ length: context.numSubpartitions }, (_, i) => new PipelinedSubpartition(i, `subpartition ${i} of partition ${context.id}`, onConsumed)),
    );
  },
};

/** Read once finished, any number of times: memory within a budget, then a spill file per subpartition. */
export const BLOCKING: PartitionType = {
  name: 'blocking',
  isPipelined: false,
  isReReadable: true,
  isCompressible: true,
  storage: 'memory, then a file per subpartition',
  poolSize: budgetPool,
  createStorage: (context) => new BlockingStorage(context),
};

/** Flink FLIP-148: one data file and one index file per partition, whatever the fan-out; readers served in file order. */
export const SORT_MERGE: PartitionType = {
  name: 'sort-merge',
  isPipelined: false,
  isReReadable: true,
  isCompressible: true,
  storage: 'a data file and an index file per partition',
  poolSize: budgetPool,
  createStorage: (context) => new SortMergeResultPartition(context),
};

/** Flink FLIP-235 (HYBRID_FULL): read while produced, spills instead of blocking its producer, re-readable once finished. */
export const HYBRID: PartitionType = {
  name: 'hybrid',
  isPipelined: true,
  isReReadable: true,
  isCompressible: true,
  storage: 'memory while consumers keep up, every buffer also written to one data file',
  poolSize: budgetPool,
  createStorage: (context) => new HybridResultPartition(context),
};

export const BUILTIN_PARTITION_TYPES: readonly PartitionType[] = [PIPELINED, BLOCKING, SORT_MERGE, HYBRID];

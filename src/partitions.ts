/**
 * `spillway/partitions`: what a partition type module imports (see
 * src/network/networkThread/partition/README.md). A type module's default export is a
 * PartitionType (or an array of them); every JobManager and TaskManager given it with
 * `--partition-type FILE` registers it, as the built-in types are registered.
 */
import { eventBuffer, EventType } from './network/Events.js';
import type { NetworkBuffer } from './network/buffer/NetworkBuffer.js';

export type { BufferPool } from './network/buffer/BufferPool.js';
export type { NetworkBuffer } from './network/buffer/NetworkBuffer.js';
export type { PartitionConfig, PartitionContext, PartitionStorage, PartitionType } from './network/networkThread/partition/PartitionType.js';
export { partitionType, registerPartitionType } from './network/networkThread/partition/PartitionTypes.js';
export { BLOCKING, HYBRID, PIPELINED, SORT_MERGE } from './network/networkThread/partition/BuiltinPartitionTypes.js';
export { PipelinedSubpartition } from './network/networkThread/partition/PipelinedSubpartition.js';
export { SubpartitionedStorage } from './network/networkThread/partition/SubpartitionedStorage.js';
export { PartitionReleasedError } from './network/networkThread/partition/ResultSubpartition.js';
export type { AvailabilityListener, ResultSubpartition, ResultSubpartitionView } from './network/networkThread/partition/ResultSubpartition.js';

/** The event that ends every subpartition: a reader's last buffer. */
export function endOfPartition(): NetworkBuffer {
  return eventBuffer(EventType.END_OF_PARTITION);
}

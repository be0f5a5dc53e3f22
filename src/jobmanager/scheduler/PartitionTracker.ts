import type { PartitionLocation } from '../../rpc/TaskDeployment.js';
import type { PartitionType } from '../../network/networkThread/partition/PartitionType.js';

export interface TrackedPartition {
  id: string;
  jobId: string;
  type: PartitionType;
  producerTask: string;
  /** Shared with the partition's group and its siblings: read, do not change. */
  consumerTasks: readonly string[];
  /** Its consumers were deployed knowing where it would be (a wide pipelined group): nobody is told when it is ready. */
  locatedAtDeploy?: boolean;
  /** Where it lives, and whether consumers may read it yet: both known once it is ready. */
  location: PartitionLocation | null;
  ready: boolean;
}

/**
 * The JobManager's record of every partition: where it lives, whether it is ready
 * (a pipelined type: first buffer produced; any other: finished) and who consumes it.
 */
export class PartitionTracker {
  private readonly partitions = new Map<string, TrackedPartition>();
  /** Grows with every change of a partition's attempt, readiness or location: what was built from the tracker at a lower one is stale. */
  version = 0;

  track(partition: Omit<TrackedPartition, 'location' | 'ready'>): void {
    this.version++;
    this.partitions.set(partition.id, { ...partition, location: null, ready: false });
  }

  get(id: string): TrackedPartition | undefined {
    return this.partitions.get(id);
  }

  /** Marks a partition ready; returns it (with its consumers to notify) the first time. */
  markReady(id: string, location: PartitionLocation): TrackedPartition | null {
    const partition = this.partitions.get(id);
    if (!partition || partition.ready) return null;
    this.version++;
    partition.ready = true;
    partition.location = location;
    return partition;
  }

  /** Forgets a partition of an attempt that was restarted. */
  untrack(id: string): void {
    this.version++;
    this.partitions.delete(id);
  }

  ofJob(jobId: string): TrackedPartition[] {
    return [...this.partitions.values()].filter((p) => p.jobId === jobId);
  }

  /** Forgets a job's partitions (their TaskManagers are told to release them). */
  releaseJob(jobId: string): void {
    for (const partition of this.ofJob(jobId)) this.partitions.delete(partition.id);
  }
}

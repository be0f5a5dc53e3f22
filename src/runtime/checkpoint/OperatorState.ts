/**
 * What an operator's state looks like in a checkpoint: its keyed part as entries, each
 * with the key group of its key (so that a later parallelism can take whole key groups),
 * and a part of its own that no key owns (a timestamp assigner's highest timestamp).
 */
export interface OperatorSnapshot {
  /** [keyGroup, ...the operator's own fields of one key's entry]. */
  keyed?: unknown[][];
  plain?: unknown;
}

/**
 * An operator whose state a checkpoint keeps (Flink's CheckpointedFunction, keyed or not):
 * snapshot() is called between records and must not wait; restore() before the first.
 */
export interface StatefulOperator {
  snapshot(): OperatorSnapshot;
  /**
   * Restores from the snapshots of the subtasks that held this operator's state: this
   * subtask's own at the same parallelism; every subtask's after a rescale, of which it
   * takes the keyed entries of the key groups it `owns` (and decides what a part of its
   * own becomes from them all).
   */
  restore(snapshots: readonly OperatorSnapshot[], owns: (keyGroup: number) => boolean): void;
}

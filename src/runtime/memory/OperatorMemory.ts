/**
 * What an operator of one's own (a `fold`) sees of its managed memory and of spilling:
 * the public face of ManagedMemory and SpillWriter, free of msgpackr's and Node's types,
 * so that the package's declarations stand on their own.
 */

/** A finished spill file: where it is and what it holds. */
export interface SpillFile {
  path: string;
  records: number;
  bytes: number;
}

/** A spill file being written: records go in, in blocks; close() gives the file, abort() removes it. */
export interface SpillOutput {
  /** Appends a record (packed as spill files pack them). */
  add(record: unknown): void;
  /** Appends a record already packed as a spill file packs one, copied from `source` between `start` and `end`. */
  addPacked(source: Uint8Array, start?: number, end?: number): void;
  /** Writes what is buffered and closes the file: once. */
  close(): SpillFile;
  /** Closes and removes the file: once, after close() too. */
  abort(): void;
}

/**
 * What an operator that holds data gets of its task's managed memory: its budget, spill
 * files, and the task's cancel. A user's SpillingFold (a `fold` operator) is made with one.
 */
export interface OperatorMemory {
  /** The operator's budget, bytes: what it may hold (counted as it likes, consistently) before it spills. */
  readonly operatorBudget: number;
  /**
   * A writer of a new spill file in the task's spill folder (`kind` names the operator in
   * the file's name), buffering `blockBytes` before each write. What it writes counts
   * as the task's spilled bytes; the file goes with the task however the task ends.
   */
  newSpillWriter(kind: string, blockBytes: number): SpillOutput;
  /**
   * Says that the operator let go of heap objects it counted as `bytes` of its budget (a
   * table written to disk or emitted), so that the heap is collected in time.
   */
  released(bytes: number): void;
  /** Throws if the task was canceled: call it between long pieces of work (emitting much, reading a spill file). */
  readonly checkpoint: () => void;
}


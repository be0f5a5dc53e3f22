import type { KindSpec } from '../job/KindRegistry.js';

/** A sink's writer in one task: records in, then end (all written) or abort (nothing kept). */
export interface SinkWriter {
  /** Takes one record; returns a promise only when the task must wait before the next. */
  push(record: unknown): void | Promise<void>;
  /** The input has ended: writes what it holds; resolves once it is stored. */
  end(): Promise<void>;
  /** The task failed or was canceled: drops what it wrote. Never throws. */
  abort(): void;
  /**
   * Exactly once (two-phase commit, as Flink's TwoPhaseCommitSinkFunction): a checkpoint
   * is taken, between records. Returns what must be stored with checkpoint
   * `checkpointId` to commit what was written since the last one (its transaction:
   * pending files, buffered records; packable with msgpackr), and starts a new one.
   * Absent: the sink writes through, at least once.
   */
  prepareCommit?(checkpointId: number): unknown | Promise<unknown>;
  /**
   * Checkpoint `checkpointId` completed: makes visible the transaction that
   * prepareCommit returned for it (given back as it was stored, perhaps by an earlier
   * attempt before a crash). Idempotent: a commit retried after a crash is a no-op.
   */
  commit?(checkpointId: number, transaction: unknown): Promise<void>;
}

/** What a sink's writer is given in its task thread. */
export interface SinkContext {
  readonly jobId: string;
  readonly subtask: number;
  readonly attempt: number;
  /**
   * Hands a collect sink's records to the JobManager; resolves once they are stored.
   * A bounded job's sink sends all at once at the end; an unbounded one's sends them as
   * they come, numbered `part` 0, 1, ... in order. With checkpoints, a part is what
   * checkpoint `part` committed of subtask `origin` (the one that prepared it): the
   * JobManager keeps each once, whoever sends it.
   */
  collected(records: unknown[], part?: number, origin?: number): Promise<void>;
  /** Whether the job's input ends. */
  readonly bounded: boolean;
  /** Runs `mail` every `ms` in the task's loop (between records), until the task ends. */
  every(ms: number, mail: () => void | Promise<void>): void;
  /** Whether the job takes checkpoints: an exactly-once sink then keeps what it writes until they complete. */
  readonly checkpointed: boolean;
  /**
   * Restoring: the transactions this subtask prepared for checkpoints up to the one
   * restored that may not have committed, oldest first, as `[checkpointId,
   * transaction]`. The task commits them through `commit` before the first record;
   * a writer may look at them as it opens (to create what committing needs).
   */
  readonly pending: readonly [number, unknown][];
}

/**
 * What the engine knows of a sink kind, one file a kind: its writer in the task, and
 * what the JobManager does with its output when the job ends. Registered in Sinks.ts.
 */
export interface SinkSpec<K extends KindSpec = KindSpec> {
  readonly kind: K['kind'];
  /** The sink's own fields: what is wrong with them, as the end of a sentence, or undefined. */
  validate(sink: K): string | undefined;
  /** Opens the writer of one subtask's attempt; fails with a coded error if it cannot. */
  open(sink: K, context: SinkContext): Promise<SinkWriter>;
  /** In the JobManager, once every task finished: makes the output of each subtask's last attempt (`attempts[subtask]`) visible. Throws a coded error. */
  commit?(sink: K, jobId: string, attempts: readonly number[]): void;
  /** In the JobManager, once a failed or canceled job's tasks stopped: removes what its attempts wrote. */
  abort?(sink: K, jobId: string): void;
}

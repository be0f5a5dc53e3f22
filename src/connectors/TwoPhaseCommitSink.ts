import { FINAL_CHECKPOINT } from './ServiceConnection.js';
import type { SinkContext, SinkWriter } from './SinkSpec.js';

/** What a checkpoint stores of a two-phase-commit sink: the job that began it, whose commit record guards it, and what was written into it. */
export interface SinkTransaction {
  readonly job: string;
}

/**
 * The skeleton of an exactly-once sink on an external store, as Flink's
 * TwoPhaseCommitSinkFunction: records go into the current transaction (invoke); at a
 * checkpoint's barrier it is prepared, stored with the checkpoint, and a new one begun
 * (prepareCommit: preCommit, then beginTransaction); once the checkpoint completes the
 * task commits it (commitTransaction, which must be idempotent: it writes what the
 * transaction holds and the checkpoint id in one store transaction, unless the id
 * stored is not older). Restoring, the task hands back what the checkpoint kept through
 * commit before anything new (Flink's recoverAndCommit). abort drops every transaction
 * not committed, with the connection.
 *
 * Without checkpoints the same writer writes through (at least once): it flushes the
 * current transaction every `batch` records, and at the end.
 *
 * One store call sequence at a time (serially): a commit may come while a flush or
 * another commit is under way.
 */
export abstract class TwoPhaseCommitSink<T extends SinkTransaction> implements SinkWriter {
  /** The transaction records go into: not yet written (without checkpoints) or not yet prepared (with). */
  private current: T;
  /** Transactions prepared whose checkpoint has not been committed here yet, by checkpoint id. */
  private readonly prepared = new Map<number, T>();
  private busy: Promise<void> = Promise.resolve();
  /** Ended or aborted: everything given was written, or dropped. */
  private closed = false;

  constructor(
    protected readonly context: SinkContext,
    /** Without checkpoints: how many records a flush waits for. */
    protected readonly batch: number,
  ) {
    this.current = this.beginTransaction();
  }

  /** A new, empty transaction of this job. Called from the constructor: it may read only `context`. */
  protected abstract beginTransaction(): T;
  /** Adds one record to the transaction; refuses one the store cannot take with a coded error. */
  protected abstract invoke(transaction: T, record: unknown): void;
  /** How many records the transaction holds. */
  protected abstract size(transaction: T): number;
  /** Writes the transaction and checkpoint `checkpointId` at once; a no-op where a checkpoint not older is stored. */
  protected abstract commitTransaction(checkpointId: number, transaction: T): Promise<void>;
  /** Without checkpoints: writes the transaction as it is. */
  protected abstract writeThrough(transaction: T): Promise<void>;
  /** Closes the connection once all is written; never throws. */
  protected abstract close(): Promise<void>;
  /** Drops the connection at once (the store forgets what it did not commit); never throws. */
  protected abstract disconnect(): void;
  /** Without checkpoints, at the end after the last flush: what the store needs to keep what was written. */
  protected async finishWriteThrough(): Promise<void> {}

  push(record: unknown): void | Promise<void> {
    this.invoke(this.current, record);
    if (!this.context.checkpointed && this.size(this.current) >= this.batch) return this.flush();
  }

  /** Without checkpoints: writes the records held. */
  flush(): Promise<void> {
    if (this.size(this.current) === 0) return Promise.resolve();
    const transaction = this.takeCurrent();
    return this.serially(() => this.writeThrough(transaction));
  }

  prepareCommit(checkpointId: number): T {
    const transaction = this.takeCurrent();
    this.prepared.set(checkpointId, transaction);
    return transaction;
  }

  commit(checkpointId: number, transaction: unknown): Promise<void> {
    // Once its input ended, everything this writer was given is written: nothing is left to commit.
    if (this.closed) return Promise.resolve();
    return this.serially(async () => {
      await this.commitTransaction(checkpointId, transaction as T);
      for (const id of this.prepared.keys()) if (id <= checkpointId) this.prepared.delete(id);
    });
  }

  async end(): Promise<void> {
    if (!this.context.checkpointed) {
      await this.flush();
      await this.finishWriteThrough();
    } else {
      // The input ended: what was prepared for checkpoints not yet completed, then the
      // rest, is committed now (a bounded job commits at its end: its task does not wait
      // for checkpoints to complete). The rest goes under FINAL_CHECKPOINT, after which any
      // commit of this job's subtask is a no-op; with no rest (a stop at a savepoint, whose
      // transaction was the last), the ids stay those of the checkpoints.
      for (const id of [...this.prepared.keys()].sort((a, b) => a - b)) await this.commit(id, this.prepared.get(id));
      const rest = this.takeCurrent();
      if (this.size(rest) > 0) await this.commit(FINAL_CHECKPOINT, rest);
    }
    this.closed = true;
    await this.close();
  }

  abort(): void {
    this.current = this.beginTransaction();
    this.prepared.clear();
    if (this.closed) return;
    this.closed = true;
    this.disconnect();
  }

  /** Runs store calls after those under way. */
  protected serially(run: () => Promise<void>): Promise<void> {
    const next = this.busy.then(run);
    this.busy = next.catch(() => undefined);
    return next;
  }

  private takeCurrent(): T {
    const transaction = this.current;
    this.current = this.beginTransaction();
    return transaction;
  }
}

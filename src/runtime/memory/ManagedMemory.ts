import fs from 'node:fs';
import path from 'node:path';
import { collectGarbage } from './HeapCollector.js';
import type { RecordPacker } from './RecordPacker.js';
import { SpillWriter } from './SpillFile.js';
import { SpillwayError } from '../../errors/Errors.js';
import type { OperatorMemory } from './OperatorMemory.js';

export type { OperatorMemory } from './OperatorMemory.js';

/** What a task thread gets with its deployment: its slot's share of managed memory and a spill folder of its own. */
export interface ManagedMemorySpec {
  /** The slot's budget, bytes. */
  bytes: number;
  /** Where the task's operators spill; the task's host removes it when the task ends, however it ends. */
  spillDir: string;
}

/**
 * What objects held in V8's heap (a hash table's records) cost in RSS per byte of their
 * live size: the heap grows to about twice what is live before a collection gives space
 * back, so tables count their entries twice. Records held packed in Buffers (a sort's)
 * count once.
 */
export const HEAP_OBJECT_FACTOR = 2;

/**
 * What an operator lets go of before the heap is collected: a quarter of its budget. Fewer
 * collections would let V8 grow the heap past the budget; more would cost time for little.
 */
const COLLECT_FRACTION = 4;
/**
 * And at least this much: less is small beside a task thread's young generation (16 MiB),
 * and collecting for it cost small budgets much time (a sort of 315 KiB: 3.5 s, not 1.2).
 */
const MIN_COLLECT_BYTES = 8 << 20;


/**
 * A task's share of its slot's managed memory, for the operators that hold data
 * (sort, keyed aggregation and folds, hash join), as Flink's managed memory. Each such operator
 * of the job gets an equal share of the slot (`operatorBudget`), counts what it holds as
 * serialized bytes, and spills to the task's spill folder past it. The folder is made
 * on the first spill and removed by release().
 */
export class ManagedMemory implements OperatorMemory {
  private files = 0;
  private made = false;
  /** Bytes written to spill files so far. */
  spilledBytes = 0;
  private canceled = false;
  /** Bytes let go of since the heap was last collected. */
  private releasedBytes = 0;
  /** Writers not closed yet: a task that fails leaves no descriptor in its thread, which runs the next task. */
  private readonly open = new Set<SpillWriter>();

  constructor(
    /** The slot's budget, bytes. */
    readonly bytes: number,
    private readonly spillDir: string | null,
    /** How many operators of the job share it. */
    private readonly holders = 1,
  ) {}

  /** A budget that holds everything: chains run in tests and tools with no TaskManager around them. */
  static unbounded(): ManagedMemory {
    return new ManagedMemory(Number.POSITIVE_INFINITY, null);
  }

  /**
   * The memory of a task of a job whose stages run `holders` operators that hold data
   * (dataHolders, src/runtime/operators/Operators.ts). A slot runs a subtask of every
   * stage of its job, so every operator of the job that holds data shares the slot's
   * budget, whichever task it is in (Flink divides a slot's managed memory among the
   * operators of its slot-sharing group): a task with a slot to itself would let a
   * reduceByKey and a sortBy of two stages each take all of it.
   */
  static of(spec: ManagedMemorySpec, holders: number): ManagedMemory {
    return new ManagedMemory(spec.bytes, spec.spillDir, holders);
  }

  /** The budget of each operator that holds data, bytes. */
  get operatorBudget(): number {
    return this.bytes / Math.max(1, this.holders);
  }

  /**
   * A writer of a new file in the task's spill folder (`kind` names the operator); what
   * it writes counts in spilledBytes, and release() closes it if its operator did not.
   */
  newSpillWriter(kind: string, blockBytes: number, packr?: RecordPacker): SpillWriter {
    const writer = new SpillWriter(this.newSpillPath(kind), {
      packr,
      blockBytes,
      written: (bytes) => (this.spilledBytes += bytes),
      ended: (w) => this.open.delete(w),
    });
    this.open.add(writer);
    return writer;
  }

  private newSpillPath(kind: string): string {
    if (this.spillDir === null) throw new SpillwayError('SPW_ERR_INTERNAL', `a ${kind} spilled without a spill folder: give its chain a ManagedMemory with one`);
    if (!this.made) fs.mkdirSync(this.spillDir, { recursive: true });
    this.made = true;
    return path.join(this.spillDir, `${kind}-${String(this.files++).padStart(5, '0')}.spill`);
  }

  /**
   * An operator let go of heap objects it counted as `bytes` of its budget (a table
   * written to disk or emitted): once a quarter of an operator's budget (8 MiB at least)
   * was let go, the heap is collected, so that the operator's next table does not grow
   * the heap past it.
   */
  released(bytes: number): void {
    this.releasedBytes += bytes;
    if (this.releasedBytes < Math.max(MIN_COLLECT_BYTES, this.operatorBudget / COLLECT_FRACTION)) return;
    this.releasedBytes = 0;
    collectGarbage();
  }

  /** The task was canceled: operators stop at their next checkpoint. */
  cancel(): void {
    this.canceled = true;
  }

  /** Where an operator that emits much stops if its task was canceled. */
  readonly checkpoint = (): void => {
    if (this.canceled) throw new SpillwayError('SPW_ERR_TASK_CANCELED', 'the task was canceled');
  };

  /** Removes the spill folder and everything in it; safe to call more than once. */
  release(): void {
    for (const writer of [...this.open]) writer.abort();
    if (this.spillDir !== null) fs.rmSync(this.spillDir, { recursive: true, force: true });
    this.made = false;
  }
}

/** The spill folder of one task under a TaskManager's managed-memory folder: the task id made safe as a file name. */
export function taskSpillDir(root: string, taskId: string): string {
  return path.join(root, taskId.replace(/[^A-Za-z0-9._-]/g, '_'));
}

import { SpillwayError } from '../errors/Errors.js';
import type { KindSpec } from '../job/KindRegistry.js';
import type { SplitSupply } from './SplitAssigner.js';

/**
 * What a source's reader is given in its task thread: where its records go, and the
 * splits the JobManager hands its subtask.
 */
export interface SourceContext {
  readonly subtask: number;
  readonly parallelism: number;
  /**
   * Hands one record to the stage's operator chain; returns a promise only when the
   * reader must wait for it before the next (backpressure). Throws
   * SPW_ERR_TASK_CANCELED once the task is canceled.
   */
  push(record: unknown): void | Promise<void>;
  /**
   * The next splits the JobManager hands this subtask, in its turn. Empty: none left
   * for a bounded source; none yet for an unbounded one (ask again later).
   */
  nextSplits(): Promise<unknown[]>;
  /** Lets the task thread's event loop turn (timers, a cancel); then throws SPW_ERR_TASK_CANCELED if canceled. Call every few thousand records. */
  pause(): Promise<void>;
  /** Waits `ms`, or less if the task is canceled meanwhile; then throws SPW_ERR_TASK_CANCELED if it was. */
  sleep(ms: number): Promise<void>;
  /**
   * Waits for `promise` at the reader's last resumable point: the task's mail, and a
   * checkpoint triggered meanwhile, run while it waits (an answer of the JobManager may
   * itself wait for that checkpoint).
   */
  wait<T>(promise: Promise<T>): Promise<T>;
  /**
   * Marks a point between records where the reader could resume, and how: its
   * `position` (JSON: for a source with splits, its place in the current split, which
   * the spec's `resume` understands; for one without, its place in its own input). A
   * checkpoint waiting to be taken is taken here, with this position; cheap when none
   * waits. Call it every few records, or at every boundary the reader can resume from.
   */
  checkpointable(position: unknown): void | Promise<void>;
  /**
   * For a source without splits, the positions it checkpointed, restoring: this
   * subtask's own at the same parallelism; every subtask's, by subtask then, after a
   * rescale (`restoredParallelism` differs). Empty on a fresh start. (A source with
   * splits gets its splits back from the JobManager, each resumed where it was.)
   */
  readonly restored: readonly unknown[];
  /** Restoring: the stage's parallelism when the checkpoint was taken. */
  readonly restoredParallelism?: number;
  /** Counts a record the reader skipped as malformed (a source's `onError: 'skip'`): the task's `malformedRecords`. */
  malformed(): void;
  /** Counts bytes of input the reader has read (a file source's split, once read, or each chunk): the task's `sourceBytes`. */
  read(bytes: number): void;
}

/**
 * What the engine knows of a source kind, one file a kind (as operators are specs,
 * src/runtime/operators): validation, the JobManager's split assignment and the task's
 * reader ask the spec, never the source's shape. Registered in Sources.ts.
 */
export interface SourceSpec<S extends KindSpec = KindSpec> {
  readonly kind: S['kind'];
  /** The source's own fields: what is wrong with them, as the end of a sentence, or undefined. */
  validate(source: S): string | undefined;
  /** Whether its input ends. A job with an unbounded source runs until it is canceled. */
  bounded(source: S): boolean;
  /** At submission, in the JobManager: that what it reads is there; throws a coded error if not. */
  check?(source: S): void;
  /**
   * In the JobManager, at a subtask's first ask: where its splits come from (once per
   * stage and job; every subtask's asks are answered from it). A promise for a supply
   * that must first ask its service something (the last entry of each Redis stream, fixed
   * there so that every task reads to the same end). Absent for a source that asks for none.
   */
  splits?(source: S, parallelism: number): SplitSupply<unknown> | Promise<SplitSupply<unknown>>;
  /** In the task thread: reads the subtask's share of the input into `context.push`; resolves at its end. */
  read(source: S, context: SourceContext): Promise<void>;
  /**
   * For a source with splits: the split that covers what is left of `split` from
   * `position` (as its reader passed it to `checkpointable`). A checkpoint stores the
   * splits a reader holds so; a restore hands them out again.
   */
  resume?(split: unknown, position: unknown): unknown;
}

/**
 * A source without splits, restoring: its own position, or SPW_ERR_RESTORE if the
 * checkpoint was taken at another parallelism (its positions are per subtask of that one).
 */
export function ownPosition(context: SourceContext, what: string): unknown {
  if (context.restored.length === 0) return undefined;
  if (context.restoredParallelism !== context.parallelism) {
    throw new SpillwayError('SPW_ERR_RESTORE', `a ${what} source keeps its position per subtask: it cannot be restored at parallelism ${context.parallelism} from a checkpoint taken at ${context.restoredParallelism}`);
  }
  return context.restored[0];
}

/** What a reader of splits holds at a checkpoint: the splits it has not finished, the current one resumed, and how many answers it had. */
export interface HeldSplits {
  splits: unknown[];
  /** Answers to its asks received, so that the JobManager knows which it handed out that never arrived. */
  received: number;
}

/**
 * Reads every split the JobManager hands the subtask, in order, with the next ask in
 * flight while a split is read, so a scan never waits for the JobManager's answer.
 * A bounded source ends at the first empty answer; an unbounded one (`pollMs` given)
 * asks again after `pollMs`. At a checkpoint it holds the splits not finished (the
 * current one resumed at the position its reader gave, with `resume`) and the answers
 * received: what a restore hands out again.
 */
export async function forEachSplit<S>(
  context: SourceContext,
  read: (split: S, at: (position: unknown) => void | Promise<void>) => Promise<void>,
  resume: (split: S, position: unknown) => S,
  pollMs?: number,
): Promise<void> {
  let received = 0;
  let queue: S[] = [];
  const ask = (): Promise<S[]> => {
    const answer = (context.nextSplits() as Promise<S[]>).then((splits) => {
      received++;
      return splits;
    });
    // An ask left behind by a failed read must not become an unhandled rejection.
    answer.catch(() => undefined);
    return answer;
  };
  let next = ask();
  for (;;) {
    // Between splits, holding none: where a checkpoint is taken while the next answer is awaited.
    await context.checkpointable({ splits: [], received } satisfies HeldSplits);
    const splits = await context.wait(next);
    if (splits.length === 0) {
      if (pollMs === undefined) return;
      await context.sleep(pollMs);
      next = ask();
      continue;
    }
    queue = [...splits];
    next = ask();
    while (queue.length > 0) {
      const split = queue[0];
      await context.pause();
      const at = (position: unknown): void | Promise<void> => context.checkpointable({ splits: [resume(split, position), ...queue.slice(1)], received } satisfies HeldSplits);
      await read(split, at);
      queue.shift();
    }
  }
}

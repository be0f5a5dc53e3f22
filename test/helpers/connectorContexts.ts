/**
 * Contexts to drive a source's reader or a sink's writer directly, as a task would, with
 * what a test needs to see: every record pushed, every position marked (and how many
 * records came before it), and a crash at a chosen record.
 */
import type { SinkContext, SinkSpec, SinkWriter } from '../../src/connectors/SinkSpec.js';
import type { Sink } from '../../src/job/JobDefinition.js';
import type { SourceContext } from '../../src/connectors/SourceSpec.js';
import type { SplitSupply } from '../../src/connectors/SplitAssigner.js';
import { SpillwayError } from '../../src/errors/Errors.js';

/** A position a reader marked, with the records it had pushed by then. */
export interface Marked {
  position: unknown;
  pushed: number;
}

export interface DrivenSource {
  context: SourceContext;
  records: unknown[];
  marks: Marked[];
  /** Makes the reader's next pause, sleep or push throw SPW_ERR_TASK_CANCELED. */
  cancel(): void;
}

/** Thrown by a driven reader's push at `crashAt`: the simulated crash. */
export class SimulatedCrash extends Error {}

/**
 * A source context of subtask 0 of 1 whose splits come from `splits` (one answer a
 * take, as the SplitAssigner gives them; with `first`, those come first, as a restore
 * gives a reader its held splits back). Throws SimulatedCrash from push once `crashAt`
 * records were pushed; `onPush` sees each record.
 */
export function drivenSource(options: { splits?: SplitSupply<unknown>; first?: unknown[]; crashAt?: number; onPush?: (record: unknown) => void } = {}): DrivenSource {
  const records: unknown[] = [];
  const marks: Marked[] = [];
  let canceled = false;
  let first = options.first;
  const check = (): void => {
    if (canceled) throw new SpillwayError('SPW_ERR_TASK_CANCELED', 'canceled by the test');
  };
  const context: SourceContext = {
    subtask: 0,
    parallelism: 1,
    push(record) {
      check();
      if (options.crashAt !== undefined && records.length >= options.crashAt) throw new SimulatedCrash(`crash after ${records.length} records`);
      records.push(record);
      options.onPush?.(record);
    },
    async nextSplits() {
      if (first !== undefined) {
        const given = first;
        first = undefined;
        return given;
      }
      return options.splits?.take() ?? [];
    },
    async pause() {
      await new Promise((resolve) => setImmediate(resolve));
      check();
    },
    async sleep(ms) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      check();
    },
    wait: (promise) => promise,
    malformed: () => undefined,
    read: () => undefined,
    checkpointable(position) {
      marks.push({ position: structuredClone(position), pushed: records.length });
    },
    restored: [],
  };
  return { context, records, marks, cancel: () => void (canceled = true) };
}

/** A sink context of `subtask` of job `jobId`: checkpointed or not, bounded or not, with the pending transactions of a restore. */
export function sinkContext(options: Partial<Pick<SinkContext, 'jobId' | 'subtask' | 'attempt' | 'bounded' | 'checkpointed' | 'pending'>> = {}): SinkContext & { flushes: (() => void | Promise<void>)[] } {
  const flushes: (() => void | Promise<void>)[] = [];
  return {
    jobId: options.jobId ?? 'job-test',
    subtask: options.subtask ?? 0,
    attempt: options.attempt ?? 0,
    bounded: options.bounded ?? true,
    checkpointed: options.checkpointed ?? false,
    pending: options.pending ?? [],
    collected: async () => undefined,
    every: (_ms, mail) => void flushes.push(mail),
    flushes,
  };
}

/** Opens a sink's writer as a restored task does: then it commits the transactions the restore handed it, oldest first, before anything new. */
export async function openRestored<K extends Sink>(spec: SinkSpec<K>, sink: K, context: SinkContext): Promise<SinkWriter> {
  const writer = await spec.open(sink, context);
  for (const [id, transaction] of context.pending) await writer.commit!(id, transaction);
  return writer;
}

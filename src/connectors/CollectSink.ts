import { SpillwayError } from '../errors/Errors.js';
import type { SinkContext, SinkSpec, SinkWriter } from './SinkSpec.js';

/** Records go to the JobManager: GET /jobs/:id/result. */
export type CollectSinkDefinition = { kind: 'collect' };

/** The part of a checkpointed collect sink's records after its last checkpoint, sent when its bounded input ends: a repeat replaces it. */
export const FINAL_PART = 2 ** 31 - 1;

/** A collect sink refuses to hold more than this; bigger results belong in a text sink. */
export const MAX_COLLECTED_RECORDS = 2_000_000;

/** How often a collect sink of an unbounded job sends what it collected, ms: a follower sees records this soon. */
export const COLLECT_INTERVAL_MS = 100;

/**
 * `{ kind: 'collect' }`: each task's records go to the JobManager (GET /jobs/:id/result):
 * at the end of its input in a bounded job; as they come, every COLLECT_INTERVAL_MS, in
 * an unbounded one (GET /jobs/:id/result?follow=true streams them). At most
 * MAX_COLLECTED_RECORDS a task, in all.
 */
/**
 * Exactly once: the records since the last checkpoint are its transaction, sent to the
 * JobManager only when the checkpoint completes (a follower sees only what checkpoints
 * cover); what comes after the last one, at the end of a bounded input, goes as the final part.
 * A transaction is part of the result of the job that prepared it: a job started from
 * another's savepoint does not commit it again into its own (the job that took the
 * savepoint commits it, and one stopped with it finishes only once it has).
 */
function exactlyOnce(context: SinkContext, held: () => unknown[], reset: () => void, push: (record: unknown) => void): SinkWriter {
  return {
    push,
    prepareCommit: () => {
      const records = held();
      reset();
      return { job: context.jobId, origin: context.subtask, records };
    },
    commit: async (checkpointId, transaction) => {
      const { job, origin, records } = transaction as { job: string; origin: number; records: unknown[] };
      if (job === context.jobId && records.length > 0) await context.collected(records, checkpointId, origin);
    },
    end: () => context.collected(held(), FINAL_PART, context.subtask),
    abort: reset,
  };
}

function limit(): SpillwayError {
  return new SpillwayError('SPW_ERR_COLLECT_LIMIT', `a collect sink holds at most ${MAX_COLLECTED_RECORDS} records; give the job an output folder`);
}

export const COLLECT_SINK: SinkSpec<CollectSinkDefinition> = {
  kind: 'collect',
  validate: () => undefined,
  async open(_sink, context) {
    let records: unknown[] = [];
    let total = 0;
    let part = 0;
    const ship = (): Promise<void> | undefined => {
      if (records.length === 0) return undefined;
      const batch = records;
      records = [];
      return context.collected(batch, part++);
    };
    if (context.checkpointed) return exactlyOnce(context, () => records, () => (records = []), (record) => {
      if (++total > MAX_COLLECTED_RECORDS) throw limit();
      records.push(record);
    });
    if (!context.bounded) context.every(COLLECT_INTERVAL_MS, ship);
    return {
      push: (record) => {
        if (++total > MAX_COLLECTED_RECORDS) throw limit();
        records.push(record);
      },
      end: async () => (context.bounded ? context.collected(records) : ship()),
      abort: () => void (records = []),
    };
  },
};

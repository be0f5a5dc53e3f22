import { sinkSpec } from '../../src/connectors/Sinks.js';
import { sourceSpec } from '../../src/connectors/Sources.js';
import type { SourceContext } from '../../src/connectors/SourceSpec.js';
import { SplitAssigner } from '../../src/connectors/SplitAssigner.js';
import { SpillwayError } from '../../src/errors/Errors.js';
import type { Sink, Source } from '../../src/job/JobDefinition.js';

/**
 * Writes `parts[i]` through the sink as subtask i of one job, then commits as the
 * JobManager does when the job finishes. Throws SPW_ERR_INVALID_JOB for a sink its spec refuses.
 */
export async function writeAll(sink: Sink, parts: readonly (readonly unknown[])[], jobId = 'job-0001-test'): Promise<void> {
  const spec = sinkSpec(sink);
  const problem = spec.validate(sink);
  if (problem !== undefined) throw new SpillwayError('SPW_ERR_INVALID_JOB', problem);
  for (const [subtask, records] of parts.entries()) {
    const writer = await spec.open(sink, { jobId, subtask, attempt: 0, collected: async () => undefined, bounded: true, every: () => undefined, checkpointed: false, pending: [] });
    for (const record of records) await writer.push(record);
    await writer.end();
  }
  spec.commit?.(sink, jobId, parts.map(() => 0));
}

export interface ReadResult {
  /** Every task's records, task 0's first. */
  records: unknown[];
  perTask: unknown[][];
  malformed: number;
  /** Bytes of input the tasks said they read (`SourceContext.read`). */
  bytes: number;
}

/**
 * Reads the source as `parallelism` tasks of one stage do: its splits from the
 * JobManager's supply through a SplitAssigner, the tasks' asks interleaved as they run
 * concurrently. Rejects with the first task's error.
 */
export async function readAll(source: Source, parallelism = 1): Promise<ReadResult> {
  const spec = sourceSpec(source);
  const problem = spec.validate(source);
  if (problem !== undefined) throw new SpillwayError('SPW_ERR_INVALID_JOB', problem);
  spec.check?.(source);
  let assigner: Promise<SplitAssigner<unknown>> | undefined;
  const perTask: unknown[][] = Array.from({ length: parallelism }, () => []);
  let malformed = 0;
  let bytes = 0;
  await Promise.all(
    perTask.map((records, subtask) => {
      let request = 0;
      const context: SourceContext = {
        subtask,
        parallelism,
        push: (record) => void records.push(record),
        nextSplits: async () => {
          const asked = request++;
          assigner ??= Promise.resolve(spec.splits!(source, parallelism)).then((supply) => new SplitAssigner(supply));
          return (await assigner).next(subtask, 0, asked);
        },
        pause: () => new Promise((resolve) => setImmediate(resolve)),
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        wait: (promise) => promise,
        malformed: () => void malformed++,
        read: (n) => void (bytes += n),
        checkpointable: () => undefined,
        restored: [],
      };
      return spec.read(source, context);
    }),
  );
  return { records: perTask.flat(), perTask, malformed, bytes };
}

/** Sorts records by their JSON, to compare what several tasks read with what was written. */
export function byJson(records: readonly unknown[]): unknown[] {
  const key = (r: unknown): string => JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)) ?? 'undefined';
  const keyed = records.map((record) => ({ record, key: key(record) }));
  return keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map(({ record }) => record);
}

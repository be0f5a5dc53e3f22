import { describe, expect, test } from 'vitest';
import { COLLECT_SINK } from '../../src/connectors/CollectSink.js';
import type { SinkContext } from '../../src/connectors/SinkSpec.js';
import { openRestored, sinkContext } from '../helpers/connectorContexts.js';

/** A checkpointed collect sink's context of job `jobId` whose commits are recorded as [checkpoint, records]. */
function recording(jobId: string, pending: SinkContext['pending'] = []): { context: SinkContext; committed: [number | undefined, unknown[]][] } {
  const committed: [number | undefined, unknown[]][] = [];
  const context = { ...sinkContext({ jobId, checkpointed: true, bounded: false, pending }), collected: async (records: unknown[], part?: number) => void committed.push([part, records]) };
  return { context, committed };
}

describe('the collect sink with checkpoints', () => {
  test("a restarted attempt of the same job commits its checkpoint's transaction again (a repeat replaces it); a job started from another job's savepoint does not", async () => {
    const { context, committed } = recording('job-a');
    const writer = await COLLECT_SINK.open({ kind: 'collect' }, context);
    for (const record of [1, 2, 3]) writer.push(record);
    const transaction = await writer.prepareCommit!(7);
    await writer.commit!(7, transaction);
    expect(committed).toEqual([[7, [1, 2, 3]]]);

    const restarted = recording('job-a', [[7, transaction]]);
    await openRestored(COLLECT_SINK, { kind: 'collect' }, restarted.context);
    expect(restarted.committed).toEqual([[7, [1, 2, 3]]]);

    // The savepoint's job committed those records into its own result: the next job's result starts after them.
    const next = recording('job-b', [[7, transaction]]);
    await openRestored(COLLECT_SINK, { kind: 'collect' }, next.context);
    expect(next.committed).toEqual([]);
  });
});

import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { JobBuilder } from '../../src/job/api/JobBuilder.js';
import { seededRandom } from '../../src/job/Corpus.js';
import type { JobDefinition } from '../../src/job/JobDefinition.js';
import { tumbling } from '../../src/runtime/windows/WindowAssigner.js';
import { partsOf, startLocalJob, type CollectedParts, type LocalCheckpoint, type LocalJob } from '../helpers/localJob.js';
import { tempDir } from '../helpers/plane.js';
import { alignedSums, randomEvents, sortWindows, type Event, type KeyedWindow } from '../helpers/windowReference.js';
import { eventually } from '../helpers/eventually.js';

/** Writes a file into a watched folder as a writer should: under a hidden name, then renamed. */
function drop(folder: string, name: string, events: readonly Event[]): void {
  const hidden = path.join(folder, `.${name}`);
  fs.writeFileSync(hidden, events.map((e) => `${e.t},${e.key},${e.value}`).join('\n') + '\n');
  fs.renameSync(hidden, path.join(folder, name));
}

/**
 * A windowed sum per key and second over a watched folder, its rows collected exactly
 * once (committed at checkpoints); `slow` ms of work a record at the window, each record
 * padded to about `pad` bytes on its way there.
 */
function windowedJob(folder: string, slow = 0, pad = 0, onRecord: () => void = () => undefined): JobDefinition {
  const job = new JobBuilder('exactly-once');
  job
    .readText(folder, { monitor: 20 })
    .parallelism(2)
    .map((line) => {
      const [t, key, value] = line.split(',').map(Number);
      return { t, key, value, pad: 'x'.repeat(pad) };
    })
    .assignTimestamps((e) => e.t, { maxOutOfOrderness: 2_000, interval: 20, idleness: 200 })
    .keyBy((e) => e.key)
    .window(tumbling(1_000))
    .aggregate({
      create: () => 0,
      add: (acc: number, e: Event) => {
        onRecord();
        const until = performance.now() + slow;
        while (performance.now() < until);
        return acc + e.value;
      },
      merge: (a, b) => a + b,
      result: (acc) => acc,
    })
    .collect();
  return job.build();
}

/** Every committed row of a job's runs so far: their collect sinks' parts, a part committed again (by a restored run) counted once, as the JobManager counts it. */
function rows(parts: CollectedParts): KeyedWindow[] {
  return [...parts.keys()].flatMap((stage) => partsOf(parts, stage)) as KeyedWindow[];
}

/** Takes checkpoints every `ms` until `done` holds of the job (its committed rows), then resolves. */
async function checkpointUntil(job: LocalJob, first: number, done: () => boolean, options: { unaligned?: boolean } = {}, ms = 50): Promise<number> {
  let id = first;
  await eventually(
    'the job done, checkpointed as it ran',
    async () => {
      if (done()) return true;
      // One that times out is aborted and the next goes on, as the coordinator does.
      await job.checkpoint(id++, options).catch((error: { code?: string }) => {
        if (error.code !== 'SPW_ERR_CHECKPOINT_FAILED') throw error;
      });
      return done();
    },
    { everyMs: ms },
  );
  return id;
}

describe('checkpoints in one process: a task crash between two runs loses and duplicates nothing', () => {
  for (const unaligned of [false, true]) {
    test(`${unaligned ? 'unaligned' : 'aligned'}: what the first run committed and the second, restored from its checkpoint, commits are the reference exactly`, async () => {
      const { dir, remove } = tempDir('ck-exact');
      const folder = path.join(dir, 'in');
      fs.mkdirSync(folder);
      try {
        const events = randomEvents(seededRandom(unaligned ? 7 : 8), 3000, 12, 30_000, 1_500);
        const options = { parallelism: 3, checkpoints: { directory: path.join(dir, 'ck') }, segmentSize: 4096, parts: new Map() as CollectedParts };
        const first = startLocalJob(windowedJob(folder), options);
        for (let i = 0; i < 3; i++) drop(folder, `part-${i}`, events.slice(i * 500, (i + 1) * 500));
        await new Promise((resolve) => setTimeout(resolve, 150));
        const checkpoint: LocalCheckpoint = await first.checkpoint(1, { unaligned });
        // Read by the first run (perhaps) and lost with it: the second reads it again.
        drop(folder, 'part-3', events.slice(1500, 2000));
        await new Promise((resolve) => setTimeout(resolve, 100));
        first.cancel();
        await first.done;

        const second = startLocalJob(windowedJob(folder), { ...options, restore: checkpoint });
        drop(folder, 'part-4', events.slice(2000, 2500));
        drop(folder, 'part-5', events.slice(2500));
        drop(folder, 'part-6', [{ t: 10_000_000, key: 0, value: 1 }]);
        const expected = alignedSums(events, 1_000);
        await checkpointUntil(second, 2, () => rows(options.parts).length >= expected.length, { unaligned });
        second.cancel();
        await second.done;
        expect(sortWindows(rows(options.parts))).toEqual(expected);
      } finally {
        remove();
      }
    });
  }

  test('unaligned under backpressure: the barrier overtakes queued buffers, their records are stored with the checkpoint and read first after a restore', async () => {
    const { dir, remove } = tempDir('ck-inflight');
    const folder = path.join(dir, 'in');
    fs.mkdirSync(folder);
    try {
      const events = randomEvents(seededRandom(3), 2400, 8, 24_000, 1_000);
      const options = { parallelism: 2, checkpoints: { directory: path.join(dir, 'ck') }, segmentSize: 4096, parts: new Map() as CollectedParts };
      // A slow window, which triggers the checkpoint at its 100th record: by then the producers' buffers have queued up, for the barrier to overtake.
      let seen = 0;
      let taken: Promise<LocalCheckpoint> | undefined;
      const first = startLocalJob(
        windowedJob(folder, 1, 1000, () => {
          if (++seen === 100) taken = first.checkpoint(1, { unaligned: true, sourcesRunning: true });
        }),
        options,
      );
      drop(folder, 'part-0', events.slice(0, 1600));
      const checkpoint = await (await eventually('the checkpoint triggered at the 100th record', () => taken && { taken }, { everyMs: 10 })).taken;
      const inFlight = [...checkpoint.acks.values()].reduce((sum, ack) => sum + ack.inFlightBytes, 0);
      expect(inFlight, 'records in flight were stored with the checkpoint').toBeGreaterThan(0);
      first.cancel();
      await first.done;

      const second = startLocalJob(windowedJob(folder, 0, 1000), { ...options, restore: checkpoint });
      drop(folder, 'part-1', events.slice(1600));
      drop(folder, 'part-2', [{ t: 10_000_000, key: 0, value: 1 }]);
      const expected = alignedSums(events, 1_000);
      await checkpointUntil(second, 2, () => rows(options.parts).length >= expected.length);
      second.cancel();
      await second.done;
      expect(sortWindows(rows(options.parts))).toEqual(expected);
    } finally {
      remove();
    }
  });

  test('a stop-with-savepoint ends every task on its own once the savepoint completed (told as mail, which the stopped task still runs)', async () => {
    const { dir, remove } = tempDir('ck-stop');
    const folder = path.join(dir, 'in');
    fs.mkdirSync(folder);
    try {
      const events = randomEvents(seededRandom(5), 600, 6, 6_000, 500);
      const job = startLocalJob(windowedJob(folder), { parallelism: 2, checkpoints: { directory: path.join(dir, 'ck') }, segmentSize: 4096 });
      drop(folder, 'part-0', events);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const stopped = await job.checkpoint(1, { stop: true });
      expect(stopped.acks.size).toBe(job.tasks.length);
      // No cancel: the tasks end on their own once told the savepoint completed.
      let ended = false;
      void job.done.then(() => (ended = true));
      await eventually('every task ended', () => ended).catch(() => job.cancel());
      expect(ended, 'every task finished after the stop').toBe(true);
    } finally {
      remove();
    }
  });
});

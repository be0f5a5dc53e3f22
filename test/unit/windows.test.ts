import { describe, expect, test } from 'vitest';
import { JobBuilder } from '../../src/job/api/JobBuilder.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { session, sliding, tumbling, windowStart } from '../../src/runtime/windows/WindowAssigner.js';
import { runLocalJob } from '../helpers/localJob.js';
import { alignedSums, compareTuples, randomEvents, sessionSums, sortWindows, windowJoinPairs, type Event, type KeyedWindow } from '../helpers/windowReference.js';

const SEEDS = Number(process.env.SEEDS ?? 4);
const sum = { create: () => 0, add: (acc: number, e: Event) => acc + e.value, merge: (a: number, b: number) => a + b, result: (acc: number) => acc };

/** The events of subtask i of n: every n-th, in the shuffled order (each subtask reads its own out-of-order share). */
function shareOf<T>(events: readonly T[], subtask: number, parallelism: number): T[] {
  return events.filter((_, i) => i % parallelism === subtask);
}

/** The records every collect sink got, flattened. */
function collectedOf<T>(collected: Map<string, unknown[][]>): T[] {
  return [...collected.values()].flat(2) as T[];
}

describe('window assigners', () => {
  test('property: a timestamp falls in exactly one tumbling window, and in size/slide sliding ones, each holding it', () => {
    const random = seededRandom(7);
    for (let i = 0; i < 2000; i++) {
      const t = Math.floor((random() - 0.5) * 1e9);
      const size = 1 + Math.floor(random() * 10_000);
      const start = windowStart(t, size);
      expect(start <= t && t < start + size, `${t} in [${start}, ${start + size})`).toBe(true);
      expect((((start % size) + size) % size) === 0).toBe(true);
    }
  });
});

describe('bounded jobs in event time: exact whatever the order records come in', () => {
  for (let seed = 1; seed <= SEEDS; seed++) {
    for (const parallelism of [1, 4]) {
      const random = seededRandom(seed * 31 + parallelism);
      const events = randomEvents(random, 3000, 1 + Math.floor(random() * 40), 60_000, 5_000);

      test(`seed ${seed}, parallelism ${parallelism}: tumbling, sliding and session windows equal the reference`, async () => {
        const job = new JobBuilder('windows');
        const timed = job.generate((subtask, n) => shareOf(events, subtask, n)).assignTimestamps((e) => e.t);
        const keyed = (tag: string) => timed.forward().name(tag).keyBy((e) => e.key);
        keyed('t').window(tumbling(1_000)).aggregate(sum).name('tumbling').collect();
        keyed('s').window(sliding(3_000, 1_000)).aggregate(sum).name('sliding').collect();
        keyed('g').window(session(700)).aggregate(sum).name('session').collect();
        const { collected } = await runLocalJob(job.build(), { parallelism, segmentSize: 4096 });
        const of = (stage: string): KeyedWindow[] => sortWindows(collected.get(stage)!.flat() as KeyedWindow[]);
        expect(of('tumbling')).toEqual(alignedSums(events, 1_000));
        expect(of('sliding')).toEqual(alignedSums(events, 3_000, 1_000));
        expect(of('session')).toEqual(sessionSums(events, 700));
      });

      test(`seed ${seed}, parallelism ${parallelism}: windowAll and a windowed join equal the reference`, async () => {
        const right = randomEvents(random, 1500, 12, 60_000, 5_000);
        const job = new JobBuilder('all');
        const left = job.generate((subtask, n) => shareOf(events, subtask, n)).assignTimestamps((e) => e.t);
        left.forward().windowAll(tumbling(5_000)).aggregate(sum).name('all').collect();
        const other = job.generate((subtask, n) => shareOf(right, subtask, n)).assignTimestamps((e) => e.t);
        left
          .forward()
          .keyBy((e) => e.key)
          .join(other.keyBy((e) => e.key), (l, r) => [l.key, windowStart(l.t, 2_000), l.value, r.value], { window: tumbling(2_000) })
          .name('join')
          .collect();
        const { collected } = await runLocalJob(job.build(), { parallelism, segmentSize: 4096 });
        const all = (collected.get('all')!.flat() as Omit<KeyedWindow, 'key'>[]).sort((a, b) => a.start - b.start);
        const expected = alignedSums(events.map((e) => ({ ...e, key: 0 })), 5_000).map(({ start, end, value }) => ({ start, end, value }));
        expect(all).toEqual(expected);
        const pairs = (collected.get('join')!.flat() as [number, number, number, number][]).sort(compareTuples);
        expect(pairs).toEqual(windowJoinPairs(events, right, 2_000));
      });
    }
  }

  test('a session window takes a record exactly gap after the last one, and not one ms later', async () => {
    const events: Event[] = [
      { t: 0, key: 1, value: 1 },
      { t: 100, key: 1, value: 2 },
      { t: 200, key: 2, value: 4 },
      { t: 301, key: 2, value: 8 },
    ];
    const job = new JobBuilder('gap');
    job.generate(() => events).assignTimestamps((e) => e.t).keyBy((e) => e.key).window(session(100)).aggregate(sum).collect();
    const { collected } = await runLocalJob(job.build(), { parallelism: 1 });
    expect(sortWindows(collectedOf<KeyedWindow>(collected))).toEqual([
      { key: 1, start: 0, end: 200, value: 3 },
      { key: 2, start: 200, end: 300, value: 4 },
      { key: 2, start: 301, end: 401, value: 8 },
    ]);
  });
});

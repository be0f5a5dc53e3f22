import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { JobBuilder } from '../../src/job/api/JobBuilder.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { KeyedState } from '../../src/runtime/state/KeyedState.js';
import { StateBudget } from '../../src/runtime/state/StateBudget.js';
import { runLocalJob } from '../helpers/localJob.js';
import { tempDir } from '../helpers/plane.js';
import { alignedSums, compareTuples, randomEvents } from '../helpers/windowReference.js';
import { eventually } from '../helpers/eventually.js';

describe('keyed process functions', () => {
  test('value, list and map state per key and event-time timers: a count per key and second equals the reference, at parallelism 1 and 3', async () => {
    const events = randomEvents(seededRandom(3), 2000, 17, 20_000, 3_000);
    const expected = alignedSums(events.map((e) => ({ ...e, value: 1 })), 1_000).map((w) => [w.key, w.start, w.value, w.value]);
    for (const parallelism of [1, 3]) {
      const job = new JobBuilder('process');
      job
        .generate((subtask, n) => events.filter((_, i) => i % n === subtask))
        .assignTimestamps((e) => e.t)
        .keyBy((e) => e.key)
        .process<[number, number, number, number]>({
          processElement(e, ctx) {
            const start = e.t - (e.t % 1_000);
            const counts = ctx.state.map<number, number>('counts');
            counts.set(start, (counts.get(start) ?? 0) + 1);
            ctx.state.list<number>('seen').add(e.t);
            const total = ctx.state.value<number>('total');
            total.set((total.get() ?? 0) + 1);
            ctx.timers.registerEventTime(start + 999);
          },
          onTimer(time, ctx, emit) {
            const start = time - 999;
            const counts = ctx.state.map<number, number>('counts');
            const seen = ctx.state.list<number>('seen');
            const inWindow = seen.get().filter((t) => t >= start && t < start + 1_000).length;
            emit([ctx.key, start, counts.get(start)!, inWindow]);
            counts.delete(start);
            seen.update(seen.get().filter((t) => t >= start + 1_000));
            expect(ctx.timeDomain).toBe('event');
            expect(ctx.timestamp).toBe(time);
          },
        })
        .collect();
      const { collected } = await runLocalJob(job.build(), { parallelism });
      expect((collected.get('process')!.flat() as number[][]).sort(compareTuples), `parallelism ${parallelism}`).toEqual(expected);
    }
  });

  test('connected keyed streams share one state per key: a stateful join of sellers and their auctions equals the reference, whichever arrives first', async () => {
    const random = seededRandom(11);
    const people = Array.from({ length: 200 }, (_, id) => ({ id, state: ['OR', 'ID', 'CA', 'WA'][Math.floor(random() * 4)] }));
    const auctions = Array.from({ length: 1500 }, (_, id) => ({ id, seller: Math.floor(random() * 200) }));
    const expected = auctions.map((a) => [a.id, a.seller, ['OR', 'ID', 'CA', 'WA'].indexOf(people[a.seller].state)]).sort(compareTuples);
    const job = new JobBuilder('q3');
    const persons = job.generate((subtask, n) => people.filter((_, i) => i % n === subtask).reverse());
    const sold = job.generate((subtask, n) => auctions.filter((_, i) => i % n === subtask));
    sold
      .keyBy((a) => a.seller)
      .connect(persons.keyBy((p) => p.id))
      .process<number[]>({
        processElement1(auction, ctx, emit) {
          const person = ctx.state.value<{ id: number; state: string }>('person').get();
          if (person) emit([auction.id, auction.seller, ['OR', 'ID', 'CA', 'WA'].indexOf(person.state)]);
          else ctx.state.list<{ id: number; seller: number }>('waiting').add(auction);
        },
        processElement2(person, ctx, emit) {
          ctx.state.value<typeof person>('person').set(person);
          const waiting = ctx.state.list<{ id: number; seller: number }>('waiting');
          for (const auction of waiting.get()) emit([auction.id, auction.seller, ['OR', 'ID', 'CA', 'WA'].indexOf(person.state)]);
          waiting.clear();
        },
      })
      .collect();
    const { collected } = await runLocalJob(job.build(), { parallelism: 3, segmentSize: 4096 });
    expect((collected.get('process')!.flat() as number[][]).sort(compareTuples)).toEqual(expected);
  });

  test('a processing-time timer fires on the wall clock in a running job, once per key and time', async () => {
    const { dir, remove } = tempDir('ptime');
    try {
      const fired: [unknown, string][] = [];
      const job = new JobBuilder('ptime');
      job
        .readText(dir, { monitor: 20 })
        .keyBy((line) => line)
        .process({
          processElement(_line, ctx) {
            // Twice for the same time: one timer.
            const at = Math.ceil((ctx.currentProcessingTime + 50) / 100) * 100;
            ctx.timers.registerProcessingTime(at);
            ctx.timers.registerProcessingTime(at);
          },
          onTimer(_time, ctx) {
            fired.push([ctx.key, ctx.timeDomain]);
          },
        })
        .discard();
      let stop!: () => void;
      const until = new Promise<void>((resolve) => (stop = resolve));
      const run = runLocalJob(job.build(), { parallelism: 2, until });
      fs.writeFileSync(path.join(dir, '.a'), 'x\ny\nx\n');
      fs.renameSync(path.join(dir, '.a'), path.join(dir, 'a'));
      await eventually('a timer of each key fired', () => fired.length >= 2);
      // A pause, not a wait: a second timer of a key, were there one, would fire in it.
      await new Promise((resolve) => setTimeout(resolve, 200));
      stop();
      await run;
      expect(fired.sort()).toEqual([
        ['x', 'processing'],
        ['y', 'processing'],
      ]);
    } finally {
      remove();
    }
  });
});

describe('keyed state', () => {
  test('past its operator share of managed memory, state fails the task with SPW_ERR_STATE_TOO_LARGE naming the setting', () => {
    const state = new KeyedState(new StateBudget('process #0 of stage s', 64 << 10));
    const grow = (): void => {
      for (let key = 0; key < 10_000; key++) {
        state.setCurrentKey(key);
        state.value<string>('v').set('x'.repeat(20));
      }
    };
    expect(grow).toThrow(expect.objectContaining({ code: 'SPW_ERR_STATE_TOO_LARGE', message: expect.stringContaining('--managed-memory') }));
  });

  test('what is cleared is no longer counted: a key whose states are all cleared leaves no entry', () => {
    const state = new KeyedState(new StateBudget('s', Infinity));
    state.setCurrentKey('k');
    state.value<number>('a').set(1);
    state.list<number>('b').add(2);
    state.map<string, number>('c').set('x', 3);
    expect(state.size).toBe(1);
    state.value<number>('a').clear();
    state.list<number>('b').clear();
    state.map<string, number>('c').delete('x');
    expect(state.size).toBe(0);
    expect(state.bytes).toBe(0);
  });

  test('a name is one kind of state: asking for it as another is SPW_ERR_USER_CODE', () => {
    const state = new KeyedState(new StateBudget('s', Infinity));
    state.value('x');
    expect(() => state.list('x')).toThrow(expect.objectContaining({ code: 'SPW_ERR_USER_CODE' }));
  });
});


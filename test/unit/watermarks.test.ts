import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { JobBuilder } from '../../src/job/api/JobBuilder.js';
import type { WindowResult } from '../../src/job/api/Stream.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { tumbling } from '../../src/runtime/windows/WindowAssigner.js';
import { WatermarkValve } from '../../src/runtime/time/WatermarkValve.js';
import { runLocalJob, startLocalJob } from '../helpers/localJob.js';
import { tempDir } from '../helpers/plane.js';
import { alignedSums, randomEvents, sortWindows, type Event, type KeyedWindow } from '../helpers/windowReference.js';
import { eventually } from '../helpers/eventually.js';

const SEEDS = Number(process.env.SEEDS ?? 30);

/** The valve's output as a model computes it: the minimum over channels active and open (the highest when all are idle), never going back. */
class ValveModel {
  private readonly marks: number[];
  private readonly idle: boolean[];
  private readonly ended: boolean[];
  output = Number.NEGATIVE_INFINITY;

  constructor(channels: number) {
    this.marks = new Array<number>(channels).fill(Number.NEGATIVE_INFINITY);
    this.idle = new Array<boolean>(channels).fill(false);
    this.ended = new Array<boolean>(channels).fill(false);
  }

  apply(step: Step): void {
    const { c } = step;
    if (this.ended[c]) return;
    if (step.kind === 'watermark') {
      this.marks[c] = Math.max(this.marks[c], step.t);
      this.idle[c] = false;
    } else if (step.kind === 'idle') this.idle[c] = step.idle;
    else this.ended[c] = true;
    const open = this.marks.map((_, i) => i).filter((i) => !this.ended[i]);
    const active = open.filter((i) => !this.idle[i]);
    // Every open channel idle: the output is flushed to the highest of them.
    const next =
      open.length === 0
        ? Number.POSITIVE_INFINITY
        : active.length === 0
          ? Math.max(...open.map((i) => this.marks[i]))
          : Math.min(...active.map((i) => this.marks[i]));
    this.output = Math.max(this.output, next);
  }
}

type Step = { kind: 'watermark'; c: number; t: number } | { kind: 'idle'; c: number; idle: boolean } | { kind: 'end'; c: number };

describe('the watermark valve', () => {
  test(`property (${SEEDS} seeds): the output is the minimum over active open channels (the highest once all are idle), never goes back, and is given out exactly when it advances`, () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const random = seededRandom(seed);
      const channels = 1 + Math.floor(random() * 5);
      const valve = new WatermarkValve(channels);
      const model = new ValveModel(channels);
      let last = Number.NEGATIVE_INFINITY;
      for (let i = 0; i < 300; i++) {
        const c = Math.floor(random() * channels);
        const roll = random();
        const step: Step =
          roll < 0.7 ? { kind: 'watermark', c, t: Math.floor(random() * 1000) + i * 3 } : roll < 0.97 ? { kind: 'idle', c, idle: random() < 0.5 } : { kind: 'end', c };
        const out = step.kind === 'watermark' ? valve.onWatermark(c, step.t, 0) : step.kind === 'idle' ? valve.onStatus(c, step.idle) : valve.onEnd(c);
        model.apply(step);
        expect(valve.watermark, `seed ${seed} step ${i}`).toBe(model.output);
        expect(out, `seed ${seed} step ${i}: given out only when it advanced`).toBe(model.output > last ? model.output : null);
        last = model.output;
      }
    }
  });

  test('one slow channel holds the output back; an idle one does not; a record makes it active again', () => {
    const valve = new WatermarkValve(2);
    valve.onWatermark(0, 100, 0);
    expect(valve.watermark).toBe(Number.NEGATIVE_INFINITY);
    valve.onWatermark(1, 10, 0);
    expect(valve.watermark).toBe(10);
    expect(valve.onWatermark(0, 200, 0)).toBeNull();
    expect(valve.onStatus(1, true)).toBe(200);
    valve.onRecord(1);
    expect(valve.isIdle).toBe(false);
    // Back in the minimum, behind the output: the output stays.
    expect(valve.onWatermark(0, 300, 0)).toBeNull();
    expect(valve.watermark).toBe(200);
    expect(valve.onWatermark(1, 250, 0)).toBe(250);
  });

  test('when the last active channel goes idle the output moves to the highest watermark, whichever channel went idle first', () => {
    for (const first of [0, 1]) {
      const valve = new WatermarkValve(2);
      valve.onWatermark(0, 4_999, 0);
      expect(valve.onStatus(first, true)).toBe(first === 0 ? null : 4_999);
      const flushed = valve.onStatus(1 - first, true);
      expect(valve.watermark).toBe(4_999);
      expect(flushed).toBe(first === 0 ? 4_999 : null);
      expect(valve.isIdle).toBe(true);
    }
  });
});

/** Writes a file into a watched folder as a writer should: under a hidden name, then renamed. */
function drop(folder: string, name: string, events: readonly Event[]): void {
  const hidden = path.join(folder, `.${name}`);
  fs.writeFileSync(hidden, events.map((e) => `${e.t},${e.key},${e.value}`).join('\n') + '\n');
  fs.renameSync(hidden, path.join(folder, name));
}

const parse = (line: string): Event => {
  const [t, key, value] = line.split(',').map(Number);
  return { t, key, value };
};


describe('an unbounded job: watermarks through the exchange', () => {
  test('a monitored folder read by files as they come: windows fire as the watermark passes them, exact; a record later than the watermark is dropped and counted', async () => {
    const { dir, remove } = tempDir('monitor');
    try {
      const random = seededRandom(5);
      const events = randomEvents(random, 4000, 25, 40_000, 2_000);
      const results: WindowResult<number, number>[] = [];
      const job = new JobBuilder('stream');
      job
        .readText(dir, { monitor: 20 })
        .parallelism(1)
        .map(parse)
        .assignTimestamps((e) => e.t, { maxOutOfOrderness: 2_000, interval: 20 })
        .keyBy((e) => e.key)
        .window(tumbling(1_000))
        .aggregate({ create: () => 0, add: (acc: number, e: Event) => acc + e.value, merge: (a, b) => a + b, result: (acc) => acc })
        .map((w) => void results.push(w))
        .discard();
      const run = startLocalJob(job.build(), { parallelism: 3 });
      // The events in four files, in the order they are written, out of order within each.
      for (let i = 0; i < 4; i++) drop(dir, `events-${i}.csv`, events.slice(i * 1000, (i + 1) * 1000));
      // A far later record moves the watermark past every window above; its own window stays open.
      drop(dir, 'later.csv', [{ t: 1_000_000, key: 0, value: 1 }]);
      const expected = alignedSums(events, 1_000);
      await eventually('every expected result', () => results.length >= expected.length);
      // Now late: its window fired long ago.
      drop(dir, 'late.csv', [{ t: 500, key: 1, value: 1000 }]);
      const dropped = (): number => run.tasks.reduce((sum, task) => sum + (task.counters.lateRecordsDropped ?? 0), 0);
      await eventually('a late record dropped', () => dropped() >= 1);
      run.cancel();
      await run.done;
      expect(sortWindows(results.map((w) => ({ ...w }) as KeyedWindow))).toEqual(expected);
      expect(dropped()).toBe(1);
    } finally {
      remove();
    }
  });

  test('a source subtask with nothing to read goes idle, so the windows after it still fire', async () => {
    const { dir, remove } = tempDir('idle');
    try {
      const results: unknown[] = [];
      const job = new JobBuilder('idle');
      job
        .readText(dir, { monitor: 20 })
        .parallelism(2)
        .map(parse)
        .assignTimestamps((e) => e.t, { idleness: 100, interval: 20 })
        .keyBy((e) => e.key)
        .window(tumbling(1_000))
        .aggregate({ create: () => 0, add: (acc: number) => acc + 1, merge: (a, b) => a + b, result: (acc) => acc })
        .map((w) => void results.push(w))
        .discard();
      let stop!: () => void;
      const until = new Promise<void>((resolve) => (stop = resolve));
      const run = runLocalJob(job.build(), { parallelism: 2, until });
      // One file: one source subtask reads it, the other never gets any.
      drop(dir, 'only.csv', [
        { t: 100, key: 1, value: 1 },
        { t: 200, key: 1, value: 1 },
        { t: 5_000, key: 2, value: 1 },
      ]);
      await eventually('a first result', () => results.length >= 1);
      stop();
      await run;
      expect(results[0]).toEqual({ key: 1, start: 0, end: 1_000, value: 2 });
    } finally {
      remove();
    }
  });
});

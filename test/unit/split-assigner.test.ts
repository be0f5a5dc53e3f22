import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { SplitAssigner, SplitRequestError } from '../../src/connectors/SplitAssigner.js';
import { ByteRangeSupply, MIN_SPLIT_BYTES, type TextSplit } from '../../src/connectors/text/TextSplits.js';
import { seededRandom } from '../../src/job/Corpus.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-splits-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A folder of files of these sizes (their bytes do not matter to the assigner). */
function folder(name: string, sizes: number[]): string {
  const at = path.join(dir, name);
  fs.mkdirSync(at);
  sizes.forEach((size, i) => fs.writeFileSync(path.join(at, `part-${String(i).padStart(3, '0')}`), Buffer.alloc(size, 0x61)));
  return at;
}

/** Checks that the splits cover every byte of every file of `input` exactly once. */
function expectExactCover(input: string, splits: TextSplit[]): void {
  for (const name of fs.readdirSync(input)) {
    const file = path.join(input, name);
    const size = fs.statSync(file).size;
    const ranges = splits.filter((s) => s.file === file).sort((a, b) => a.start - b.start);
    let at = 0;
    for (const r of ranges) {
      expect(r.start, `${name}: a gap or an overlap at ${at}`).toBe(at);
      expect(r.end).toBeGreaterThan(r.start);
      at = r.end;
    }
    expect(at, name).toBe(size);
  }
}

describe('SplitAssigner', () => {
  test('one subtask gets the whole input in its first answer, then nothing', () => {
    const input = folder('single', [3000, 0, 5000]);
    const assigner = new SplitAssigner(new ByteRangeSupply(input, 1));
    const first = assigner.next(0, 0, 0);
    expect(first.map((s) => s.end - s.start)).toEqual([3000, 5000]);
    expect(assigner.next(0, 0, 1)).toEqual([]);
    expectExactCover(input, first);
  });

  test('splits shrink as the input runs out and never fall below the minimum but the last', () => {
    const input = folder('guided', [40 * MIN_SPLIT_BYTES + 12345, 7 * MIN_SPLIT_BYTES]);
    const assigner = new SplitAssigner(new ByteRangeSupply(input, 2));
    const sizes: number[] = [];
    const all: TextSplit[] = [];
    for (let request = 0; ; request++) {
      const answer = assigner.next(request % 2, 0, request >> 1);
      if (answer.length === 0) break;
      all.push(...answer);
      sizes.push(answer.reduce((sum, s) => sum + s.end - s.start, 0));
    }
    expect(sizes[0]).toBe(Math.ceil((47 * MIN_SPLIT_BYTES + 12345) / 4));
    for (let i = 1; i < sizes.length; i++) expect(sizes[i]).toBeLessThanOrEqual(sizes[i - 1]);
    expect(sizes.slice(0, -1).every((size) => size >= MIN_SPLIT_BYTES)).toBe(true);
    // About 2p ln(input / minimum) answers, not one per megabyte.
    expect(sizes.length).toBeLessThan(30);
    expectExactCover(input, all);
  });

  test('a repeated request gets the same answer; one out of turn or of a superseded attempt is refused', () => {
    const input = folder('replay', [10 * MIN_SPLIT_BYTES]);
    const assigner = new SplitAssigner(new ByteRangeSupply(input, 2));
    const first = assigner.next(0, 0, 0);
    expect(assigner.next(0, 0, 0)).toEqual(first);
    expect(() => assigner.next(0, 0, 2)).toThrow(SplitRequestError);
    assigner.next(1, 1, 0);
    expect(() => assigner.next(1, 0, 0)).toThrow(expect.objectContaining({ code: 'SPW_ERR_SPLIT_REQUEST' }));
  });

  test('what a restarted attempt was given is handed out again, before anything new', () => {
    const input = folder('giveback', [10 * MIN_SPLIT_BYTES]);
    const assigner = new SplitAssigner(new ByteRangeSupply(input, 2));
    const lost = assigner.next(0, 0, 0);
    assigner.giveBack(0);
    expect(assigner.next(1, 0, 0)).toEqual(lost);
    // A next attempt asking first gives back what its predecessor had, without a giveBack.
    const held = assigner.next(1, 0, 1);
    expect(assigner.next(1, 1, 0)).toEqual(lost);
    expect(assigner.next(1, 1, 1)).toEqual(held);
  });

  test('property: random sizes, parallelism, turns, restarts and repeats cover every byte exactly once', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const rand = seededRandom(seed);
      const sizes = Array.from({ length: 1 + Math.floor(rand() * 6) }, () => (rand() < 0.15 ? 0 : Math.floor(rand() * 9 * MIN_SPLIT_BYTES)));
      const input = folder(`random-${seed}`, sizes);
      const p = 1 + Math.floor(rand() * 6);
      const assigner = new SplitAssigner(new ByteRangeSupply(input, p));
      // What each subtask's current attempt read: an earlier attempt's output is discarded.
      const attempts = Array.from({ length: p }, () => ({ attempt: 0, answers: [] as TextSplit[][], done: false }));
      let restarts = 0;
      while (attempts.some((a) => !a.done)) {
        const s = Math.floor(rand() * p);
        const sub = attempts[s];
        if (restarts < 8 && rand() < 0.08) {
          // A restart (running or finished: a lost partition is produced again).
          assigner.giveBack(s);
          attempts[s] = { attempt: sub.attempt + 1, answers: [], done: false };
          restarts++;
          continue;
        }
        if (sub.done) continue;
        if (sub.answers.length > 0 && rand() < 0.1) {
          // A lost answer asked again.
          expect(assigner.next(s, sub.attempt, sub.answers.length - 1)).toEqual(sub.answers.at(-1));
          continue;
        }
        const answer = assigner.next(s, sub.attempt, sub.answers.length);
        sub.answers.push(answer);
        if (answer.length === 0) sub.done = true;
      }
      expectExactCover(
        input,
        attempts.flatMap((a) => a.answers.flat()),
      );
    }
  });
});

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { parseSize } from '../../src/cli/Size.js';
import { parseParams } from '../../src/cli/Submit.js';
import { seededRandom } from '../../src/job/Corpus.js';
import { InvalidJobError, type JobDefinition, type StageDefinition } from '../../src/job/JobDefinition.js';
import { validateJob } from '../../src/job/JobValidation.js';
import { listInputFiles, readLines, splitsFor } from '../../src/connectors/text/TextSplits.js';
import { forEachWord, scanWords } from '../../src/job/Tokenizer.js';
import { ownerOf } from '../../src/jobmanager/scheduler/ExecutionGraph.js';
import { compileChain } from '../../src/runtime/OperatorChain.js';
import { combining, UNCOMBINED_WINDOWS } from '../../src/runtime/Chain.js';
import { operatorSpec } from '../../src/runtime/operators/Operators.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-job-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

describe('text splits', () => {
  /** Random lines: empty ones, multibyte ones, long ones; sometimes no newline at the end. */
  function randomText(seed: number): string {
    const random = seededRandom(seed);
    const alphabet = ['a', 'b', ' ', 'é', '日本', '🙂', '\r'];
    const lines: string[] = [];
    const count = Math.floor(random() * 200);
    for (let i = 0; i < count; i++) {
      const length = random() < 0.1 ? 0 : Math.floor(random() * (random() < 0.1 ? 5000 : 40));
      let line = '';
      for (let j = 0; j < length; j++) line += alphabet[Math.floor(random() * alphabet.length)];
      lines.push(line);
    }
    return lines.join('\n') + (random() < 0.5 ? '\n' : '');
  }

  test.each([1, 2, 3, 4, 5])('seed %i: every line is read exactly once, in order, for 1 to 9 subtasks and any chunk size', async (seed) => {
    const dir = path.join(work, `split-${seed}`);
    fs.mkdirSync(dir);
    const texts = [0, 1, 2].map((i) => randomText(seed * 10 + i));
    texts.forEach((text, i) => fs.writeFileSync(path.join(dir, `f${i}.txt`), text));
    const expected = texts.flatMap((text) => {
      const lines = text.split('\n');
      return text.endsWith('\n') || text === '' ? lines.slice(0, -1) : lines;
    });
    const files = listInputFiles(dir);
    for (const chunkSize of [64, 4096, 1 << 20]) {
      for (let parallelism = 1; parallelism <= 9; parallelism++) {
        const lines: string[] = [];
        for (let subtask = 0; subtask < parallelism; subtask++) {
          for (const split of splitsFor(files, subtask, parallelism)) await readLines(split, (line) => void lines.push(line), chunkSize);
        }
        expect(lines, `parallelism ${parallelism}, chunks of ${chunkSize} bytes`).toEqual(expected);
      }
    }
  });

  test('long runs of lines, ASCII or not, are read exactly once and in order', async () => {
    const dir = path.join(work, 'long');
    fs.mkdirSync(dir);
    const random = seededRandom(7);
    const lines = Array.from({ length: 40_000 }, (_, i) => (i % 5000 === 4999 ? 'x'.repeat(100_000) : `line ${i} ${random() < 0.001 ? 'Straße 日本' : 'plain ascii'}`));
    fs.writeFileSync(path.join(dir, 'f.txt'), lines.join('\n') + '\n');
    for (const parallelism of [1, 3]) {
      const read: string[] = [];
      for (let subtask = 0; subtask < parallelism; subtask++) {
        for (const split of splitsFor(listInputFiles(dir), subtask, parallelism)) await readLines(split, (line) => void read.push(line));
      }
      expect(read.length).toBe(lines.length);
      expect(read).toEqual(lines);
    }
  });

  test('an input is a file, a folder or a glob; a missing one is an error that names it', () => {
    const dir = path.join(work, 'glob');
    fs.mkdirSync(dir);
    for (const name of ['a.txt', 'b.txt', 'c.log', '.hidden']) fs.writeFileSync(path.join(dir, name), 'x\n');
    expect(listInputFiles(path.join(dir, 'a.txt'))).toEqual([path.join(dir, 'a.txt')]);
    expect(listInputFiles(dir).map((f) => path.basename(f))).toEqual(['a.txt', 'b.txt', 'c.log']);
    expect(listInputFiles(path.join(dir, '*.txt')).map((f) => path.basename(f))).toEqual(['a.txt', 'b.txt']);
    expect(() => listInputFiles(path.join(dir, 'nope'))).toThrow(expect.objectContaining({ code: 'SPW_ERR_SOURCE_IO' }));
    expect(() => listInputFiles(path.join(dir, '*.csv'))).toThrow(expect.objectContaining({ code: 'SPW_ERR_SOURCE_IO' }));
  });
});

describe('job validation', () => {
  const source: StageDefinition = { name: 'src', source: { kind: 'generate', generate: () => [] } };
  const job = (...stages: StageDefinition[]): JobDefinition => ({ name: 'j', stages });
  const sink = (name: string, from: string): StageDefinition => ({ name, inputs: [{ from, partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } });

  test('a valid job comes back in topological order', () => {
    const order = validateJob(job(sink('out', 'mid'), { name: 'mid', inputs: [{ from: 'src', partitioning: { type: 'rebalance' } }] }, source), 2);
    expect(order.map((s) => s.name)).toEqual(['src', 'mid', 'out']);
  });

  test.each<[string, JobDefinition, number, RegExp]>([
    ['a cycle', job(source, sink('a', 'b'), { name: 'b', inputs: [{ from: 'a', partitioning: { type: 'rebalance' } }] }), 1, /cycle: (a -> b -> a|b -> a -> b)/],
    ['a duplicate name', job(source, sink('src', 'src')), 1, /"src" is used twice/],
    ['an unknown input', job(source, sink('out', 'ghost')), 1, /unknown stage "ghost"/],
    ['no sink', job(source), 1, /no sink/],
    ['a dead end', job(source, sink('out', 'src'), { name: 'dead', inputs: [{ from: 'src', partitioning: { type: 'rebalance' } }] }), 1, /"dead" has neither a sink nor a stage reading it/],
    ['parallelism 0', job(source, sink('out', 'src')), 0, /parallelism must be a positive integer/],
    ['a stage wider than the job', job({ ...source, parallelism: 3 }, sink('out', 'src')), 2, /parallelism 3 exceeds the job's 2/],
    ['an unknown partitioning', job(source, { name: 'out', inputs: [{ from: 'src', partitioning: { type: 'zigzag' } as never }], sink: { kind: 'collect' } }), 1, /unknown partitioning "zigzag"/],
    ['a forward edge between different widths', job({ ...source, parallelism: 1 }, { name: 'out', inputs: [{ from: 'src', partitioning: { type: 'forward' } }], sink: { kind: 'collect' } }), 2, /forward input needs equal parallelism/],
    ['two inputs without a join', job(source, { name: 'out', inputs: [{ from: 'src', partitioning: { type: 'rebalance' } }, { from: 'src', partitioning: { type: 'rebalance' } }], sink: { kind: 'collect' } }), 1, /only a join reads more than one/],
  ])('%s is refused with SPW_ERR_INVALID_JOB, naming the problem', (_, definition, parallelism, message) => {
    expect(() => validateJob(definition, parallelism)).toThrow(InvalidJobError);
    expect(() => validateJob(definition, parallelism)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB', message: expect.stringMatching(message) }));
  });
});

test('placement: instance i of n on worker floor(i*w/n), contiguous, equal widths aligned', () => {
  for (let workers = 1; workers <= 5; workers++) {
    for (let n = 1; n <= 12; n++) {
      const owners = Array.from({ length: n }, (_, i) => ownerOf(i, n, workers));
      expect(owners).toEqual([...owners].sort((a, b) => a - b));
      expect(Math.max(...owners)).toBeLessThan(workers);
      if (n >= workers) expect(new Set(owners).size).toBe(workers);
    }
  }
});

describe('operator chain', () => {
  test('map, filter, flatMap, reduceByKey and sortBy compose, and end() flushes in order', async () => {
    const out: unknown[] = [];
    const chain = compileChain(
      [
        { kind: 'flatMap', flatMap: (line) => (line as string).split(' ') },
        { kind: 'filter', filter: (w) => (w as string).length > 0 },
        { kind: 'map', map: (w) => [w, 1] },
        { kind: 'reduceByKey', reduceByKey: { key: (r) => (r as [string, number])[0], reduce: (a, b) => [(a as [string, number])[0], (a as [string, number])[1] + (b as [string, number])[1]] } },
        { kind: 'sortBy', sortBy: { key: (r) => (r as [string, number])[0] } },
      ],
      (r) => void out.push(r),
      async () => void out.push('end'),
    );
    for (const line of ['b a', 'c  a', 'b']) await chain.push(line);
    expect(out).toEqual([]);
    await chain.end();
    expect(out).toEqual([['a', 2], ['b', 2], ['c', 1], 'end']);
  });

  test('a step that must wait holds the rest of a flatMap until it may go on', async () => {
    const out: number[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const chain = compileChain([{ kind: 'flatMap', flatMap: () => [1, 2, 3] }], (r) => {
      out.push(r as number);
      if (r === 1) return gate;
    }, async () => {});
    const waiting = chain.push('x');
    expect(out).toEqual([1]);
    release();
    await waiting;
    expect(out).toEqual([1, 2, 3]);
  });

  test('a flatMap that emits its records: the rest of its output, emitted or returned, waits for a step that must wait, in order', async () => {
    const out: unknown[] = [];
    const gates: (() => void)[] = [];
    const chain = compileChain(
      [
        {
          kind: 'flatMap',
          flatMap: (r, emit) => {
            for (let i = 0; i < 3; i++) emit(`${r as string}${i}`);
            if (r === 'b') return ['b-returned'];
          },
        },
      ],
      (r) => {
        out.push(r);
        if (r === 'a0' || r === 'b1') return new Promise<void>((resolve) => gates.push(resolve));
      },
      async () => {},
    );
    const first = chain.push('a');
    expect(out).toEqual(['a0']);
    gates.shift()!();
    await first;
    expect(out).toEqual(['a0', 'a1', 'a2']);
    const second = chain.push('b');
    expect(out).toEqual(['a0', 'a1', 'a2', 'b0', 'b1']);
    gates.shift()!();
    await second;
    expect(out).toEqual(['a0', 'a1', 'a2', 'b0', 'b1', 'b2', 'b-returned']);
    expect(chain.push('c')).toBeUndefined();
    expect(out.slice(-3)).toEqual(['c0', 'c1', 'c2']);
  });

  test('the map-side combiner folds per key and flushes when it holds maxKeys keys, so memory stays bounded', async () => {
    const out: [number, number][] = [];
    const reduce = { kind: 'reduceByKey', reduceByKey: { key: (r: unknown) => (r as number[])[0], reduce: (a: unknown, b: unknown) => [(a as number[])[0], (a as number[])[1] + (b as number[])[1]] } } as const;
    const sum = operatorSpec(reduce).mapSideCombiner!(reduce);
    const combiner = combining(sum, (r) => void out.push(r as [number, number]), async () => {}, 10);
    // Runs of 40 records per key: folded into one record each; 25 keys exceed maxKeys, so it flushes early.
    for (let i = 0; i < 1000; i++) await combiner.push([Math.floor(i / 40), 1]);
    expect(out.length).toBeGreaterThan(0);
    await combiner.end();
    const totals = new Map<number, number>();
    for (const [k, n] of out) totals.set(k, (totals.get(k) ?? 0) + n);
    expect([...totals.values()].reduce((a, b) => a + b, 0)).toBe(1000);
    expect(totals.size).toBe(25);
    expect(out.length).toBeLessThan(100);
  });

  test('the map-side combiner ships records of keys that hardly repeat as they come, and folds again once keys repeat', async () => {
    const maxKeys = 10;
    const out: [number, number][] = [];
    const reduce = { kind: 'reduceByKey', reduceByKey: { key: (r: unknown) => (r as number[])[0], reduce: (a: unknown, b: unknown) => [(a as number[])[0], (a as number[])[1] + (b as number[])[1]] } } as const;
    const combiner = combining(operatorSpec(reduce).mapSideCombiner!(reduce), (r) => void out.push(r as [number, number]), async () => {}, maxKeys);
    const uncombined = UNCOMBINED_WINDOWS * maxKeys;
    const input: [number, number][] = [];
    // Distinct keys first, through two folded windows and the records shipped between, then 5 keys over and over.
    for (let i = 0; i < 2 * maxKeys + uncombined; i++) input.push([1000 + i, 1]);
    for (let i = 0; i < 2000; i++) input.push([i % 5, 1]);
    const shippedAfter: number[] = [];
    for (const record of input) {
      await combiner.push(record);
      shippedAfter.push(out.length);
    }
    await combiner.end();
    // The first window folds maxKeys records of maxKeys keys: then each record goes on at once, for `uncombined` records.
    expect(shippedAfter[maxKeys - 1]).toBe(maxKeys);
    for (let i = maxKeys; i < maxKeys + uncombined; i++) expect(shippedAfter[i], `record ${i}`).toBe(i + 1);
    // The window folded next has distinct keys again; after the next uncombined records, the 5 keys fold into 5 records.
    const resumed = 2 * maxKeys + 2 * uncombined;
    expect(out.length).toBe(resumed + 5);
    expect(shippedAfter[input.length - 1]).toBe(resumed);
    const totals = new Map<number, number>();
    for (const [k, n] of out) totals.set(k, (totals.get(k) ?? 0) + n);
    const expected = new Map<number, number>();
    for (const [k, n] of input) expected.set(k, (expected.get(k) ?? 0) + n);
    expect(totals).toEqual(expected);
  });
});

test('the fast tokenizer finds exactly the words of the reference tokenizer', () => {
  const random = seededRandom(42);
  const pieces = ['Hello', 'WORLD', "don't", 'x1', '42', ' ', '  ', ',', '.', '\t', '\n', 'Éclair', 'straße', 'İstanbul', 'ΣΊΣΥΦΟΣ', '日本語', '🙂', '-', "'", 'Café', '\x7f', '\x01'];
  for (let i = 0; i < 2000; i++) {
    let text = '';
    const length = Math.floor(random() * 12);
    for (let j = 0; j < length; j++) text += pieces[Math.floor(random() * (random() < 0.7 ? 11 : pieces.length))];
    const expected: string[] = [];
    forEachWord(text, (w) => void expected.push(w));
    const scanned: string[] = [];
    scanWords(text, (w) => void scanned.push(w));
    expect(scanned, JSON.stringify(text)).toEqual(expected);
  }
});

test('sizes and params from the command line', () => {
  expect(parseSize('32kb')).toBe(32 * 1024);
  expect(parseSize('64mb')).toBe(64 * 1024 ** 2);
  expect(parseSize('1gb')).toBe(1024 ** 3);
  expect(parseSize('4096')).toBe(4096);
  expect(() => parseSize('lots')).toThrow(expect.objectContaining({ code: 'SPW_ERR_USAGE' }));
  expect(parseParams(['input=corpus/', 'records=1000', 'output=2024', 'a=b=c'])).toEqual({ input: 'corpus/', records: '1000', output: '2024', a: 'b=c' });
  expect(() => parseParams(['novalue'])).toThrow(expect.objectContaining({ code: 'SPW_ERR_USAGE' }));
});

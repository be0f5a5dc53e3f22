import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { seededRandom } from '../../src/job/Corpus.js';
import { checkSortOutput, sortInput } from '../../src/job/builtins/Sort.js';
import type { KeyFn, Operator } from '../../src/job/JobDefinition.js';
import { naturalOrder } from '../../src/keys/KeyOrder.js';
import { ExternalSorter } from '../../src/runtime/memory/ExternalSorter.js';
import { HybridHashJoin } from '../../src/runtime/memory/HybridHashJoin.js';
import { ManagedMemory } from '../../src/runtime/memory/ManagedMemory.js';
import { SpillError } from '../../src/runtime/memory/SpillFile.js';
import { SpillingAggregator } from '../../src/runtime/memory/SpillingAggregator.js';
import { WordCountMerger } from '../../src/job/builtins/wordcount/WordCountMerger.js';
import { compileChain } from '../../src/runtime/OperatorChain.js';
import { forEachWord } from '../../src/job/Tokenizer.js';
import { WordCounter, type WordCountGroup, type WordCountRecord } from '../../src/job/builtins/wordcount/WordCounter.js';
import { dataHolders } from '../../src/runtime/operators/Operators.js';

interface Row {
  id: number;
  key: unknown;
  pad: string;
}

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-managed-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function memory(bytes: number): ManagedMemory {
  return new ManagedMemory(bytes, path.join(dir, 'task'));
}

/** Files left in the task's spill folder. */
function spillFiles(): string[] {
  const task = path.join(dir, 'task');
  return fs.existsSync(task) ? fs.readdirSync(task) : [];
}

/** Rows of random sizes (0-300 characters of padding) with keys drawn from few values, so that stability shows. */
function rows(count: number, seed: number, key: (random: () => number) => unknown): Row[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, (_, id) => ({ id, key: key(random), pad: 'p'.repeat(Math.floor(random() ** 3 * 300)) }));
}

const KEYS: Record<string, (random: () => number) => unknown> = {
  // Integers sort on one number made of key and position (64-bit, or a double past a 2^32 span); fractions with a comparator.
  'small integers': (random) => Math.floor(random() * 1000) - 500,
  integers: (random) => Math.floor(random() * 2 ** 40) - 2 ** 39,
  numbers: (random) => Math.floor(random() * 500) - 250 + (random() < 0.1 ? 0.5 : 0),
  strings: (random) => `k${Math.floor(random() * 500)}é`,
  // Neither all numbers nor all strings: compared as strings, as naturalOrder does.
  mixed: (random) => [null, true, false, 'a', 'zz', 'b'][Math.floor(random() * 6)],
};

async function sorted(records: readonly Row[], budget: number): Promise<{ out: Row[]; runs: number }> {
  const sorter = new ExternalSorter((r) => (r as Row).key, budget, memory(budget));
  for (const r of records) sorter.push(r);
  const out: Row[] = [];
  await sorter.finish((r) => void out.push(r as Row));
  return { out, runs: sorter.spilledRuns };
}

/** The largest budget (to 5%) that makes at least `runs` runs of these records: estimated from the runs of a small one. */
async function budgetFor(records: readonly Row[], runs: number): Promise<number> {
  const probe = 4096;
  let budget = Math.floor((probe * (await sorted(records, probe)).runs) / runs);
  while ((await sorted(records, budget)).runs < runs) budget = Math.floor(budget * 0.95);
  return budget;
}

describe('external merge sort', () => {
  test.each([
    ['numbers', 2],
    ['small integers', 10],
    ['integers', 10],
    ['strings', 10],
    ['mixed', 100],
    ['numbers', 100],
  ])('keys of %s, a budget that forces %i runs: equals a stable Array.prototype.sort', async (kind, runs) => {
    const records = rows(4000, runs * 7 + kind.length, KEYS[kind]);
    const budget = await budgetFor(records, runs);
    const { out, runs: written } = await sorted(records, budget);
    expect(written, 'runs written').toBeGreaterThanOrEqual(runs);
    expect(written, 'runs written').toBeLessThan(runs * 1.5 + 2);
    const expected = [...records].sort((a, b) => naturalOrder(a.key, b.key));
    expect(out).toEqual(expected);
    expect(spillFiles(), 'run files left').toEqual([]);
  });

  test('flat records ([key, id, padding] arrays, packed straight into chunks), a budget that forces 10 runs: equal a stable Array.prototype.sort', async () => {
    const records = rows(4000, 5, KEYS.integers).map((r): [unknown, number, string] => [r.key, r.id, r.pad]);
    const sorter = new ExternalSorter((r) => (r as [unknown])[0], 40_000, memory(40_000));
    for (const r of records) sorter.push(r);
    const out: unknown[] = [];
    await sorter.finish((r) => void out.push(r));
    expect(sorter.spilledRuns, 'runs written').toBeGreaterThanOrEqual(10);
    expect(out).toEqual([...records].sort((a, b) => naturalOrder(a[0], b[0])));
    expect(spillFiles(), 'run files left').toEqual([]);
  });

  test('a budget that holds everything sorts in memory and writes nothing', async () => {
    const records = rows(2000, 3, KEYS.numbers);
    const { out, runs } = await sorted(records, 64 << 20);
    expect(runs).toBe(0);
    expect(out).toEqual([...records].sort((a, b) => naturalOrder(a.key, b.key)));
    expect(fs.existsSync(path.join(dir, 'task')), 'spill folder made').toBe(false);
  });

  test('records of every exchangeable kind come back as they went in', async () => {
    const values = [new Map([[1, 'a']]), { a: 1, b: [2, 3] }, Buffer.from([1, 2, 3]), new Date(5), 12n, null, 'é中😀', -2.5, [{ x: 1 }, { y: 2 }]];
    const records = values.flatMap((value, i) => Array.from({ length: 50 }, (_, j) => ({ id: i * 50 + j, key: (j * 7) % 13, pad: '', value })));
    const { out, runs } = await sorted(records, 4096);
    expect(runs).toBeGreaterThan(1);
    expect(out).toEqual([...records].sort((a, b) => naturalOrder(a.key, b.key)));
  });

  test('the sortBy operator of a chain spills within its share and emits in order', async () => {
    const records = rows(3000, 11, KEYS.strings);
    const out: unknown[] = [];
    const chain = compileChain([{ kind: 'sortBy', sortBy: { key: (r) => (r as Row).key } }], (r) => void out.push(r), async () => void out.push('end'), memory(16 << 10));
    for (const r of records) await chain.push(r);
    await chain.end();
    expect(out).toEqual([...[...records].sort((a, b) => naturalOrder(a.key, b.key)), 'end']);
  });
});

describe('spill files that do not check out', () => {
  /** A sorter that has spilled runs, and their paths. */
  function spilledSorter(): { sorter: ExternalSorter; files: string[] } {
    const sorter = new ExternalSorter((r) => (r as Row).key, 8192, memory(8192));
    for (const r of rows(2000, 5, KEYS.numbers)) sorter.push(r);
    const files = spillFiles().map((f) => path.join(dir, 'task', f));
    expect(files.length).toBeGreaterThan(2);
    return { sorter, files };
  }

  async function finishError(sorter: ExternalSorter): Promise<SpillError> {
    const error = await sorter.finish(() => {}).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SpillError);
    return error as SpillError;
  }

  test('a run file that is gone fails the merge with a message that names it', async () => {
    const { sorter, files } = spilledSorter();
    fs.rmSync(files[1]);
    const error = await finishError(sorter);
    expect(error.code).toBe('SPW_ERR_SPILL_MISSING');
    expect(error.message).toContain(files[1]);
  });

  test('a run file with a flipped byte fails its checksum', async () => {
    const { sorter, files } = spilledSorter();
    const bytes = fs.readFileSync(files[0]);
    bytes[bytes.length >> 1] ^= 0x40;
    fs.writeFileSync(files[0], bytes);
    const error = await finishError(sorter);
    expect(error.code).toBe('SPW_ERR_SPILL_CORRUPT');
    expect(error.message).toMatch(/corrupt at byte \d+: a block fails its checksum/);
  });

  test('a run file cut short fails, also when cut at a block boundary', async () => {
    const { sorter, files } = spilledSorter();
    const bytes = fs.readFileSync(files[0]);
    fs.writeFileSync(files[0], bytes.subarray(0, bytes.length - 3));
    fs.writeFileSync(files[1], Buffer.alloc(0));
    const error = await finishError(sorter);
    expect(error.code).toBe('SPW_ERR_SPILL_CORRUPT');
    expect(error.message).toMatch(/cut short|ends after 0 of its \d+ records/);
  });
});

type Pair = [key: number | string, value: number];

function referenceReduce(records: readonly Pair[]): Pair[] {
  const map = new Map<unknown, number>();
  for (const [k, v] of records) map.set(k, (map.get(k) ?? 0) + v);
  return sortPairs([...map].map(([k, v]) => [k as Pair[0], v]));
}

function sortPairs<T extends unknown[]>(records: T[]): T[] {
  return records.sort((a, b) => naturalOrder(a[0], b[0]) || naturalOrder(JSON.stringify(a), JSON.stringify(b)));
}

describe('spilling keyed aggregation', () => {
  const sum = (a: unknown, b: unknown): Pair => [(a as Pair)[0], (a as Pair)[1] + (b as Pair)[1]];

  test.each([
    ['holds everything', 64 << 20, 0, 0],
    ['spills the table 2 times or more', 200 << 10, 2, 1],
    ['splits partitions again (too many keys for one partition)', 24 << 10, 2, 2],
  ])('a budget that %s: equals an in-memory reduce', async (_, budget, minSpills, depth) => {
    const random = seededRandom(budget);
    const records: Pair[] = Array.from({ length: 40_000 }, () => {
      const k = Math.floor(random() * 8000);
      return [k % 3 === 0 ? `s${k}` : k, Math.floor(random() * 10)];
    });
    const aggregator = new SpillingAggregator((r) => (r as Pair)[0], sum, budget, memory(budget));
    for (const r of records) aggregator.push([...r]);
    const out: Pair[] = [];
    await aggregator.finish((r) => void out.push(r as Pair));
    expect(aggregator.spills, 'times the table spilled').toBeGreaterThanOrEqual(minSpills);
    expect(aggregator.deepest, 'levels of partitions').toBe(depth);
    expect(sortPairs(out)).toEqual(referenceReduce(records));
    expect(spillFiles(), 'partition files left').toEqual([]);
  });

  test('a reduce that throws after the table spilled leaves, once the task releases its memory, no file and no open descriptor', () => {
    const descriptors = (): number => fs.readdirSync('/proc/self/fd').length;
    const before = descriptors();
    const managed = memory(16 << 10);
    const aggregator = new SpillingAggregator((r) => (r as Pair)[0], (a, b) => {
      if ((b as Pair)[1] < 0) throw new Error('a user function failed');
      return sum(a, b);
    }, 16 << 10, managed);
    for (let i = 0; i < 5000; i++) aggregator.push([i, 1]);
    expect(aggregator.spills).toBeGreaterThan(0);
    aggregator.push([4999, 1]);
    expect(() => aggregator.push([4999, -1])).toThrow('a user function failed');
    expect(descriptors(), 'partition files open').toBeGreaterThan(before);
    managed.release();
    expect(descriptors()).toBe(before);
    expect(fs.existsSync(path.join(dir, 'task')), 'the spill folder').toBe(false);
  });

  test('combineByKey on the reduce side merges combiners within a small budget', async () => {
    const random = seededRandom(9);
    // Map-side combined [key, combiner] pairs: combiners are lists, merged by concatenation.
    const records = Array.from({ length: 20_000 }, (_, i) => [Math.floor(random() * 3000), [i]] as [number, number[]]);
    const out: [number, number[]][] = [];
    const op = { kind: 'combineByKey' as const, combineByKey: { key: (r: unknown) => r, create: (r: unknown) => [r], merge: (c: unknown) => c, mergeCombiners: (a: unknown, b: unknown) => [...(a as number[]), ...(b as number[])] } };
    const chain = compileChain([op], (r) => void out.push(r as [number, number[]]), async () => {}, memory(32 << 10));
    for (const r of records) await chain.push(r);
    await chain.end();
    const expected = new Map<number, number[]>();
    for (const [k, [i]] of records) expected.set(k, [...(expected.get(k) ?? []), i]);
    expect(out.length).toBe(expected.size);
    for (const [k, list] of out) expect([...list].sort((a, b) => a - b), `key ${k}`).toEqual(expected.get(k));
  });
});

describe('spilling word counts (the built-in word count\'s fold)', () => {
  /** Groups of packed counts as tokenize tasks ship them: `tasks` counters over random words, each Unicode now and then. */
  function shippedGroups(tasks: number, words: number, seed: number): { groups: WordCountGroup[]; expected: Map<string, number> } {
    const random = seededRandom(seed);
    const expected = new Map<string, number>();
    const groups: WordCountGroup[] = [];
    for (let t = 0; t < tasks; t++) {
      const counter = new WordCounter();
      const text = Array.from({ length: words }, () => {
        const k = Math.floor(random() ** 2 * 20_000);
        return k % 7 === 0 ? `Ωmega${k}` : `w${k}`;
      }).join(' ');
      counter.add(Buffer.from(text));
      forEachWord(text, (w) => expected.set(w, (expected.get(w) ?? 0) + 1));
      groups.push(...counter.groupedCounts(64));
    }
    return { groups, expected };
  }

  test.each([
    ['holds everything', 64 << 20, 0, 0],
    ['spills the counts 2 times or more', 256 << 10, 2, 1],
    ['splits partitions again (too many words for one partition)', 40 << 10, 2, 2],
  ])('a budget that %s: every word once, with its exact count', async (_, budget, minSpills, depth) => {
    const { groups, expected } = shippedGroups(4, 30_000, budget);
    const merger = new WordCountMerger(memory(budget));
    for (const group of groups) merger.push(group);
    const out = new Map<string, number>();
    await merger.finish(([word, count]: WordCountRecord) => {
      expect(out.has(word), `"${word}" emitted twice`).toBe(false);
      out.set(word, count);
    });
    expect(merger.spills, 'times the counts spilled').toBeGreaterThanOrEqual(minSpills);
    expect(merger.deepest, 'levels of partitions').toBe(depth);
    expect(out).toEqual(expected);
    expect(spillFiles(), 'partition files left').toEqual([]);
  });

  test('packed counts cut short are refused, not miscounted', () => {
    const counter = new WordCounter();
    counter.add(Buffer.from('alpha beta gamma'));
    const [[, packed]] = counter.groupedCounts(1);
    for (const cut of [1, 3, packed.length - 1]) expect(() => new WordCounter().addCounts(packed.subarray(0, cut)), `cut at ${cut}`).toThrow(expect.objectContaining({ code: 'SPW_ERR_CORRUPT_FRAME' }));
  });
});

describe('the slot\'s budget', () => {
  test('is shared equally by the operators that hold data in every stage of the job, whichever task runs them', () => {
    const key = (r: unknown): unknown => r;
    const stages: Operator[][] = [
      [{ kind: 'map', map: key }, { kind: 'reduceByKey', reduceByKey: { key, reduce: (a) => a } }],
      [{ kind: 'sortBy', sortBy: { key } }, { kind: 'filter', filter: () => true }],
    ];
    const shared = ManagedMemory.of({ bytes: 64 << 20, spillDir: dir }, dataHolders(stages.flat()));
    expect(shared.operatorBudget).toBe(32 << 20);
  });
});

describe('hybrid hash join', () => {
  type Build = [id: number, name: string];
  type Probe = [id: number, amount: number];
  type Joined = [number, string, number];
  const spec = { keys: [(r: unknown) => (r as Build)[0], (r: unknown) => (r as Probe)[0]] as [KeyFn, KeyFn], combine: (b: unknown, p: unknown): Joined => [(b as Build)[0], (b as Build)[1], (p as Probe)[1]] };

  function reference(build: readonly Build[], probe: readonly Probe[]): Joined[] {
    const byKey = new Map<number, Build[]>();
    for (const b of build) byKey.set(b[0], [...(byKey.get(b[0]) ?? []), b]);
    return probe.flatMap((p) => (byKey.get(p[0]) ?? []).map((b) => spec.combine(b, p)));
  }

  async function joined(build: readonly Build[], probe: readonly Probe[], budget: number): Promise<{ out: Joined[]; spilled: number; deepest: number }> {
    const join = new HybridHashJoin(spec, budget, memory(budget));
    for (const b of build) join.build(b);
    const out: Joined[] = [];
    const emit = (r: unknown): void => void out.push(r as Joined);
    for (const p of probe) await join.probe(p, emit);
    await join.finish(emit);
    return { out, spilled: join.spilledPartitions, deepest: join.deepest };
  }

  test.each([
    ['holds the build side', 64 << 20, 0, 0],
    ['holds a third of the build side', 800 << 10, 1, 1],
    ['holds a fiftieth of it (partitions split again)', 48 << 10, 16, 2],
  ])('a budget that %s: equals an in-memory join', async (_, budget, minSpilled, depth) => {
    const random = seededRandom(budget);
    const build: Build[] = Array.from({ length: 8000 }, (_, i) => [Math.floor(random() * 6000), `b${i}${'x'.repeat(Math.floor(random() * 40))}`]);
    const probe: Probe[] = Array.from({ length: 20_000 }, (_, i) => [Math.floor(random() * 7000), i]);
    const { out, spilled, deepest } = await joined(build, probe, budget);
    expect(spilled, 'partitions spilled').toBeGreaterThanOrEqual(minSpilled);
    expect(deepest, 'levels of partitions').toBe(depth);
    expect(sortPairs(out)).toEqual(sortPairs(reference(build, probe)));
    expect(spillFiles(), 'partition files left').toEqual([]);
  });

  test('one key with more build records than the budget (skew) is joined block by block', async () => {
    const build: Build[] = Array.from({ length: 1500 }, (_, i) => [i % 10 === 0 ? i : 7, `b${i}`]);
    const probe: Probe[] = Array.from({ length: 200 }, (_, i) => [i % 4 === 0 ? 7 : i, i]);
    const { out, spilled, deepest } = await joined(build, probe, 16 << 10);
    expect(spilled).toBeGreaterThan(0);
    expect(deepest, 'levels of partitions: to the last, then block by block').toBe(4);
    expect(out.length).toBe(reference(build, probe).length);
    expect(sortPairs(out)).toEqual(sortPairs(reference(build, probe)));
    expect(spillFiles(), 'partition files left').toEqual([]);
  });
});

describe('the sort job\'s output check', () => {
  const lines = (order: number[]): string => {
    const records = [...sortInput(4, 8)];
    return order.map((i) => `${records[i][0]}\t${records[i][1]}\n`).join('');
  };
  const sortedOrder = [...sortInput(4, 8)].map((r, i) => [r[0], i]).sort((a, b) => a[0] - b[0]).map(([, i]) => i);

  test.each([
    ['sorted and complete', sortedOrder, null],
    ['a record missing', sortedOrder.slice(1), /3 records written, not 4/],
    ['a record twice', [...sortedOrder.slice(0, 3), sortedOrder[2]], /comes twice/],
    ['two records swapped', [sortedOrder[1], sortedOrder[0], ...sortedOrder.slice(2)], /after/],
  ])('finds part files %s', (_, order, fault) => {
    fs.writeFileSync(path.join(dir, 'part-00000'), lines(order.slice(0, 2)));
    fs.writeFileSync(path.join(dir, 'part-00001'), lines(order.slice(2)));
    const found = checkSortOutput(dir, 4, 8, 1);
    if (fault === null) expect(found).toBeNull();
    else expect(found).toMatch(fault);
  });

  test('finds a record whose key is not its own, though every key is in order and every record there once', () => {
    const records = [...sortInput(4, 8)];
    const [first, ...rest] = sortedOrder;
    expect(records[first][0]).toBeGreaterThan(0);
    const line = (i: number, key = records[i][0]): string => `${key}\t${records[i][1]}\n`;
    fs.writeFileSync(path.join(dir, 'part-00000'), line(first, records[first][0] - 1) + rest.map((i) => line(i)).join(''));
    fs.rmSync(path.join(dir, 'part-00001'), { force: true });
    expect(checkSortOutput(dir, 4, 8, 1)).toMatch(/checksum/);
  });
});

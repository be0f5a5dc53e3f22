import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { seededRandom, zipfCorpusText } from '../../src/job/Corpus.js';
import { InvalidJobError, validateJob, type Accumulate, type JobDefinition, type Operator } from '../../src/job/JobDefinition.js';
import { listInputFiles, readChunks, splitsFor } from '../../src/connectors/text/TextSplits.js';
import { forEachWord } from '../../src/job/Tokenizer.js';
import { countWordGroups, MAX_DISTINCT_WORDS, wordCount, WORD_GROUPS, type WordCountGroup, type WordCountRecord } from '../../src/job/builtins/wordcount/WordCount.js';
import { WordCounter } from '../../src/job/builtins/wordcount/WordCounter.js';
import { compileChain } from '../../src/runtime/OperatorChain.js';
import { channelForKey } from '../../src/network/taskThread/writer/ChannelSelector.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-accumulate-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** Sums its records and emits the sum and the count at the end; records how it was called. */
function summing(calls: string[]): Accumulate<{ sum: number; n: number }> {
  return {
    create: () => {
      calls.push('create');
      return { sum: 0, n: 0 };
    },
    add: (state, record) => {
      state.sum += record as number;
      state.n++;
    },
    emit: (state, emit) => {
      calls.push('emit');
      emit(['sum', state.sum]);
      emit(['n', state.n]);
    },
  };
}

describe('accumulate operator', () => {
  test('state is made once, fed every record, and emitted once at the end, before the end goes on', async () => {
    const calls: string[] = [];
    const out: unknown[] = [];
    const chain = compileChain([{ kind: 'map', map: (r) => (r as number) * 2 }, { kind: 'accumulate', accumulate: summing(calls) }, { kind: 'map', map: (r) => r }], (r) => void out.push(r), async () => void out.push('end'));
    for (let i = 1; i <= 4; i++) expect(chain.push(i)).toBeUndefined();
    expect(out).toEqual([]);
    await chain.end();
    expect(out).toEqual([['sum', 20], ['n', 4], 'end']);
    expect(calls).toEqual(['create', 'emit']);
  });

  test('a returned generator is pulled only as fast as a waiting next step takes its records', async () => {
    let pulled = 0;
    const spec: Accumulate<number[]> = {
      create: () => [],
      add: (state, r) => void state.push(r as number),
      emit: function* (state) {
        for (const r of state) {
          pulled++;
          yield r;
        }
      },
    };
    const gates: (() => void)[] = [];
    const out: unknown[] = [];
    const chain = compileChain([{ kind: 'accumulate', accumulate: spec }], (r) => {
      out.push(r);
      if (r === 2) return new Promise<void>((resolve) => gates.push(resolve));
    }, async () => void out.push('end'));
    for (const r of [1, 2, 3, 4]) chain.push(r);
    const ended = chain.end();
    await new Promise((r) => setImmediate(r));
    expect(out, 'stopped at the record that must wait').toEqual([1, 2]);
    expect(pulled, 'nothing pulled past it').toBe(2);
    gates.shift()!();
    await ended;
    expect(out).toEqual([1, 2, 3, 4, 'end']);
  });

  test('add may give out records on the way, and they wait for a waiting next step in order', async () => {
    const spec: Accumulate<number[]> = {
      create: () => [],
      add: (state, r, emit) => {
        state.push(r as number);
        if (state.length === 3) emit(state.splice(0));
      },
      emit: (state) => (state.length > 0 ? [state] : []),
    };
    const gates: (() => void)[] = [];
    const out: unknown[] = [];
    const chain = compileChain([{ kind: 'accumulate', accumulate: spec }], (r) => {
      out.push(r);
      return new Promise<void>((resolve) => gates.push(resolve));
    }, async () => void out.push('end'));
    for (const r of [1, 2]) expect(chain.push(r)).toBeUndefined();
    const waiting = chain.push(3);
    expect(waiting, 'the flush waits').toBeInstanceOf(Promise);
    gates.shift()!();
    await waiting;
    chain.push(4);
    const ended = chain.end();
    await new Promise((r) => setImmediate(r));
    gates.shift()!();
    await ended;
    expect(out).toEqual([[1, 2, 3], [4], 'end']);
  });

  test.each<[string, Operator, string]>([
    ['an accumulate without emit', { kind: 'accumulate', accumulate: { create: () => 0, add: () => {} } as never }, 'operator 0 (accumulate) needs the function emit'],
    ['an accumulate of no functions', { kind: 'accumulate', accumulate: {} as never }, 'needs the functions create, add, emit'],
  ])('%s is refused with SPW_ERR_INVALID_JOB, naming the missing functions', (_, operator, missing) => {
    const job: JobDefinition = { name: 'j', stages: [{ name: 's', source: { kind: 'generate', generate: () => [] }, operators: [operator], sink: { kind: 'collect' } }] };
    expect(() => validateJob(job, 1)).toThrow(InvalidJobError);
    expect(() => validateJob(job, 1)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB', message: expect.stringContaining(missing) }));
  });

  test.each([
    ['chunks is no boolean', { kind: 'text' as const, text: 'x', chunks: 'yes' as never }, /source chunks must be true or false, not "yes"/],
    ['reuse is no boolean', { kind: 'text' as const, text: 'x', chunks: true, reuse: 1 as never }, /source reuse must be true or false, not 1/],
    ['reuse is asked of lines', { kind: 'text' as const, text: 'x', reuse: true }, /source reuse applies to chunks only; set chunks: true/],
  ])('a text source whose %s is refused with SPW_ERR_INVALID_JOB', (_, source, message) => {
    const job: JobDefinition = { name: 'j', stages: [{ name: 's', source, sink: { kind: 'collect' } }] };
    expect(() => validateJob(job, 1)).toThrow(expect.objectContaining({ code: 'SPW_ERR_INVALID_JOB', message: expect.stringMatching(message) }));
  });
});

/** Runs the built-in wordcount's two stages in this process: tokenize tasks over chunk splits, a hash exchange by word, count tasks. */
async function runWordCountStages(input: string, parallelism: number): Promise<{ counts: Map<string, number>; shipped: number }> {
  const job = wordCount({ input });
  validateJob(job, parallelism);
  const [tokenize, count] = job.stages;
  expect(tokenize.source).toEqual({ kind: 'text', text: input, chunks: true, reuse: true });
  const partitioning = count.inputs![0].partitioning;
  if (partitioning.type !== 'hash') throw new Error('count reads a hash exchange');
  const exchanged: unknown[][] = Array.from({ length: parallelism }, () => []);
  let shipped = 0;
  for (let subtask = 0; subtask < parallelism; subtask++) {
    const chain = compileChain(tokenize.operators!, (r) => {
      // A tokenize task ships a group's words packed in one record.
      const words = new WordCounter();
      words.addCounts((r as WordCountGroup)[1]);
      shipped += words.size;
      exchanged[channelForKey(partitioning.key(r), parallelism)].push(r);
    }, async () => {});
    for (const split of splitsFor(listInputFiles(input), subtask, parallelism)) await readChunks(split, chain.push, { reuse: true });
    await chain.end();
  }
  const counts = new Map<string, number>();
  for (const records of exchanged) {
    const chain = compileChain(count.operators!, (r) => {
      const [word, n] = r as WordCountRecord;
      if (counts.has(word)) throw new Error(`${word} counted by two tasks`);
      counts.set(word, n);
    }, async () => {});
    for (const r of records) chain.push(r);
    await chain.end();
  }
  return { counts, shipped };
}

function referenceCounts(files: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const file of files) forEachWord(fs.readFileSync(file, 'utf8'), (w) => counts.set(w, (counts.get(w) ?? 0) + 1));
  return counts;
}

describe('the built-in wordcount', () => {
  test.each([1, 2, 3, 5])('parallelism %i over the realistic corpus and random Unicode lines: exactly the reference, each word shipped once per tokenize task', async (parallelism) => {
    const dir = path.join(work, `wc-${parallelism}`);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'a.txt'), zipfCorpusText(300_000, parallelism));
    const random = seededRandom(parallelism);
    const pieces = ['Word', 'ΟΔΟΣ', 'İstanbul', 'e\u0301', '日本', '🙂', "don't", ' ', ' ', '\n', 'ÀÉ', 'Ж', '\u2014', '42'];
    const lines = Array.from({ length: 3000 }, () => pieces[Math.floor(random() * pieces.length)]);
    fs.writeFileSync(path.join(dir, 'b.txt'), Buffer.concat([Buffer.from(lines.join('')), Buffer.from([0xe6, 0x97, 0x20, 0xff])]));
    const files = listInputFiles(dir);
    const reference = referenceCounts(files);
    const { counts, shipped } = await runWordCountStages(dir, parallelism);
    expect(counts).toEqual(reference);
    expect(shipped).toBeLessThanOrEqual(reference.size * parallelism);
  });

  test(`a tokenize task past ${MAX_DISTINCT_WORDS} distinct words gives out its counts in groups and starts again`, () => {
    const counter = countWordGroups.create();
    const text = Array.from({ length: MAX_DISTINCT_WORDS }, (_, i) => `w${i}`).join(' ');
    const groups = countWordGroups.add(counter, Buffer.from('w0 ' + text), () => {}) as WordCountGroup[];
    expect(groups).toHaveLength(WORD_GROUPS);
    expect(counter.size).toBe(0);
    const shipped = new WordCounter();
    for (const [, packed] of groups) shipped.addCounts(packed);
    expect(shipped.size).toBe(MAX_DISTINCT_WORDS);
    expect(new Map(shipped.entries()).get('w0')).toBe(2);
  });
});

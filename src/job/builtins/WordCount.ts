import type { Accumulate, JobDefinition, Sink } from '../JobDefinition.js';
import { requireString } from './Params.js';
import { WordCounter } from '../WordCounter.js';

export type WordCountRecord = [word: string, count: number];

/** A task's counter gives out its counts and starts again past this many distinct words, so its memory stays bounded. */
export const MAX_DISTINCT_WORDS = 1 << 19;

/**
 * Counts the words of chunks of UTF-8 text (a `{ text, chunks: true }` source) per
 * task, as forEachWord finds them, and emits one [word, count] per distinct word at
 * the end: keyed counting over text for any job.
 */
export const countWords: Accumulate<WordCounter> = {
  create: () => new WordCounter(),
  add: (counter, chunk) => {
    counter.add(chunk as Uint8Array);
    if (counter.size >= MAX_DISTINCT_WORDS) {
      const counts = [...counter.entries()];
      counter.clear();
      return counts;
    }
  },
  emit: (counter) => counter.entries(),
};

/**
 * Words of the input counted: [word, count]. Each tokenize task counts the bytes of
 * its chunks of lines (one string per distinct word, not per word) and ships each of
 * its words once with its count; the hash exchange brings a word's counts together.
 */
export function wordCount(params: Record<string, unknown>): JobDefinition {
  const input = requireString(params, 'input');
  const output = params.output === undefined ? undefined : requireString(params, 'output');
  const sink: Sink = output === undefined ? { collect: true } : { text: output };
  const word = (r: unknown): unknown => (r as WordCountRecord)[0];
  return {
    name: 'wordcount',
    stages: [
      { name: 'tokenize', source: { text: input, chunks: true }, operators: [{ accumulate: countWords }] },
      {
        name: 'count',
        inputs: [{ from: 'tokenize', partitioning: { type: 'hash', key: word } }],
        operators: [{ reduceByKey: { key: word, reduce: (a, b) => [(a as WordCountRecord)[0], (a as WordCountRecord)[1] + (b as WordCountRecord)[1]] } }],
        sink,
      },
    ],
  };
}

import type { JobDefinition } from '../JobDefinition.js';
import { JobBuilder } from '../api/JobBuilder.js';
import type { Accumulator } from '../api/Stream.js';
import { requireString } from './Params.js';
import { WordCounter } from '../WordCounter.js';

export type WordCountRecord = [word: string, count: number];

/** A task's counter gives out its counts and starts again past this many distinct words, so its memory stays bounded. */
export const MAX_DISTINCT_WORDS = 1 << 19;

/**
 * Counts the words of chunks of UTF-8 text (a chunked text source) per task, as
 * forEachWord finds them, and emits one [word, count] per distinct word at the end:
 * keyed counting over text for any job.
 */
export const countWords: Accumulator<WordCounter, Uint8Array, WordCountRecord> = {
  create: () => new WordCounter(),
  add: (counter, chunk) => {
    counter.add(chunk);
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
  const job = new JobBuilder('wordcount');
  const counts = job
    // The counter copies what it keeps (a distinct word's bytes), so the chunks can share one buffer.
    .readTextChunks(input, { reuse: true })
    .accumulate(countWords)
    .name('tokenize')
    .keyBy(([word]) => word)
    .reduce(([word, a], [, b]) => [word, a + b])
    .name('count');
  if (output === undefined) counts.collect();
  else counts.writeText(output);
  return job.build();
}

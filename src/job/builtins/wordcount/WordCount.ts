import type { JobDefinition } from '../../JobDefinition.js';
import { JobBuilder } from '../../api/JobBuilder.js';
import type { Accumulator } from '../../api/Stream.js';
import { requireString } from '../../Params.js';
import { WordCounter, type WordCountGroup, type WordCountRecord } from './WordCounter.js';
import { WordCountMerger } from './WordCountMerger.js';

export type { WordCountGroup, WordCountRecord };

/**
 * Groups the counts are shipped in: a word's group is fixed by its bytes, and the
 * hash exchange sends every task's counts of a group to one count task (as Flink's key
 * groups). Many more than any parallelism, so the count tasks share the words evenly.
 */
export const WORD_GROUPS = 256;

/** A task's counter gives out its counts and starts again past this many distinct words, so its memory stays bounded. */
export const MAX_DISTINCT_WORDS = 1 << 19;

/**
 * Counts the words of chunks of UTF-8 text (a chunked text source) per task, as
 * forEachWord finds them, and ships its counts as bytes: in WORD_GROUPS packed groups,
 * no string made. A hash exchange by group, then a fold with a WordCountMerger, adds
 * them up.
 */
export const countWordGroups: Accumulator<WordCounter, Uint8Array, WordCountGroup> = {
  create: () => new WordCounter(),
  add: (counter, chunk) => {
    counter.add(chunk);
    if (counter.size >= MAX_DISTINCT_WORDS) {
      const groups = counter.groupedCounts(WORD_GROUPS);
      counter.clear();
      return groups;
    }
  },
  emit: (counter) => counter.groupedCounts(WORD_GROUPS),
};

/**
 * Words of the input counted: [word, count]. Each tokenize task counts the bytes of
 * its chunks of lines and ships each of its words once with its count, as bytes in
 * groups; the hash exchange brings a group's counts together, and the count task adds
 * them up byte range by byte range, within its managed memory (a `fold`). A string is
 * made once per distinct word, by the count task that gives it out.
 */
export function wordCount(params: Record<string, unknown>): JobDefinition {
  const input = requireString(params, 'input');
  const output = params.output === undefined ? undefined : requireString(params, 'output');
  const job = new JobBuilder('wordcount');
  const counts = job
    // The counter copies what it keeps (a distinct word's bytes), so the chunks can share one buffer.
    .readTextChunks(input, { reuse: true })
    .accumulate(countWordGroups)
    .name('tokenize')
    .partitionByHash(([group]) => group)
    .fold((memory) => new WordCountMerger(memory))
    .name('count');
  if (output === undefined) counts.collect();
  else counts.writeText(output);
  return job.build();
}

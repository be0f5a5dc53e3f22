// A word count written with the typed builder, as a user's job module. Submit it with
//   npx spillway submit examples/wordcount.ts --param input=corpus/ [--param output=out/] --wait
// (`--typecheck` checks its types first). Without `output` the counts are collected:
// GET /jobs/<id>/result. With it, each counting task writes out/part-0000i, `word<TAB>count` a line.
import { JobBuilder, requireString, type JobDefinition, type JobParams } from 'spillway';

/** A word: letters, digits and apostrophes, lowercased. */
const WORD = /[\p{L}\p{N}']+/gu;

export default function wordCount(params: JobParams): JobDefinition {
  const input = requireString(params, 'input');
  const output = params.output === undefined ? undefined : requireString(params, 'output');
  const job = new JobBuilder('wordcount-example');
  const counts = job
    .readText(input)
    // Each word goes on as it is found: no array per line.
    .flatMap<string>((line, emit) => {
      // Found first, then lower-cased: lowering the line first would split a word at a letter
      // whose lower case is not one letter alone (İ becomes i and a combining dot).
      for (const [word] of line.matchAll(WORD)) emit(word.toLowerCase());
    })
    .name('tokenize')
    .keyBy((word) => word)
    // Counted per word in each tokenizing task first: only [word, count] pairs cross the network.
    .combine({ create: () => 1, merge: (count) => count + 1, mergeCombiners: (a, b) => a + b })
    .name('count');
  if (output === undefined) counts.collect();
  else counts.writeText(output);
  return job.build();
}

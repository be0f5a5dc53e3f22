// How many words of each length a text holds, ignoring words of one letter:
//   npx spillway submit examples/word-lengths.ts --param input=corpus/ --wait
// Shows filter, map, a keyed reduce, and a sort by key before a collect sink.
import { JobBuilder, requireString, type JobDefinition, type JobParams } from 'spillway';

type LengthCount = [length: number, count: number];

export default function wordLengths(params: JobParams): JobDefinition {
  const job = new JobBuilder('word-lengths');
  job
    .readText(requireString(params, 'input'))
    .flatMap((line) => line.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [])
    .filter((word) => word.length > 1)
    .map((word): LengthCount => [word.length, 1])
    .name('words')
    .keyBy(([length]) => length)
    // Associative, so also applied in each `words` task before the exchange.
    .reduce((a, b) => [a[0], a[1] + b[1]])
    .sortBy(([length]) => length)
    .name('histogram')
    .collect();
  return job.build();
}

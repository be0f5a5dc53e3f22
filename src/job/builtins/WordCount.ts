import type { JobDefinition, Sink } from '../JobDefinition.js';
import { requireString } from './Params.js';
import { scanWords } from '../Tokenizer.js';

export type WordCountRecord = [word: string, count: number];

/** Words of the input's lines counted: [word, count], combined map-side before the hash exchange. */
export function wordCount(params: Record<string, unknown>): JobDefinition {
  const input = requireString(params, 'input');
  const output = params.output === undefined ? undefined : requireString(params, 'output');
  const sink: Sink = output === undefined ? { collect: true } : { text: output };
  return {
    name: 'wordcount',
    stages: [
      { name: 'tokenize', source: { text: input }, operators: [{ flatMap: (line, emit) => scanWords(line as string, emit) }] },
      {
        name: 'count',
        inputs: [{ from: 'tokenize', partitioning: { type: 'hash', key: (word) => word } }],
        // Counted per word map-side into plain numbers: no tuple per word.
        operators: [{ combineByKey: { key: (word) => word, create: () => 1, merge: (n) => (n as number) + 1, mergeCombiners: (a, b) => (a as number) + (b as number) } }],
        sink,
      },
    ],
  };
}

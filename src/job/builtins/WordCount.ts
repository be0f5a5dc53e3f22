import type { JobDefinition, Sink } from '../JobDefinition.js';
import { forEachWord } from '../Tokenizer.js';

export type WordCountRecord = [word: string, count: number];

/** Words of the input's lines counted: [word, count], combined map-side before the hash exchange. */
export function wordCount(params: Record<string, unknown>): JobDefinition {
  const input = requireString(params, 'input');
  const output = params.output === undefined ? undefined : requireString(params, 'output');
  const sink: Sink = output === undefined ? { collect: true } : { text: output };
  return {
    name: 'wordcount',
    stages: [
      {
        name: 'tokenize',
        source: { text: input },
        operators: [{ flatMap: (line) => wordsOf(line as string) }],
      },
      {
        name: 'count',
        inputs: [{ from: 'tokenize', partitioning: { type: 'hash', key: (r) => (r as WordCountRecord)[0] } }],
        operators: [
          {
            reduceByKey: {
              key: (r) => (r as WordCountRecord)[0],
              reduce: (a, b) => [(a as WordCountRecord)[0], (a as WordCountRecord)[1] + (b as WordCountRecord)[1]],
            },
          },
        ],
        sink,
      },
    ],
  };
}

function wordsOf(line: string): WordCountRecord[] {
  const words: WordCountRecord[] = [];
  forEachWord(line, (word) => words.push([word, 1]));
  return words;
}

export function requireString(params: Record<string, unknown>, name: string): string {
  const value = params[name];
  if (typeof value !== 'string' || value === '') throw new Error(`parameter "${name}" must be a non-empty string`);
  return value;
}

export function numberParam(params: Record<string, unknown>, name: string, fallback: number, min = 0): number {
  const raw = params[name] ?? fallback;
  const value = typeof raw === 'string' ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new Error(`parameter "${name}" must be a number >= ${min}, not ${JSON.stringify(raw)}`);
  }
  return value;
}

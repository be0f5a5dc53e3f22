import type { JobDefinition, Sink } from '../JobDefinition.js';
import { words } from '../Tokenizer.js';

export type WordCountRecord = [word: string, count: number];

/** Words of the input's lines counted: [word, count], combined map-side before the hash exchange. */
export function wordCount(params: Record<string, unknown>): JobDefinition {
  const input = requireString(params, 'input');
  const output = params.output === undefined ? undefined : requireString(params, 'output');
  const sink: Sink = output === undefined ? { collect: true } : { text: output };
  return {
    name: 'wordcount',
    stages: [
      { name: 'tokenize', source: { text: input }, operators: [{ flatMap: (line) => words(line as string) }] },
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

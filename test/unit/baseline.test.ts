import { describe, expect, test } from 'vitest';
import { countWords } from '../../bench/baselines.js';
import { seededRandom, zipfCorpusText } from '../../src/job/Corpus.js';
import { forEachWord } from '../../src/job/Tokenizer.js';

function reference(bytes: Buffer): Map<string, number> {
  const counts = new Map<string, number>();
  forEachWord(bytes.toString('utf8'), (word) => counts.set(word, (counts.get(word) ?? 0) + 1));
  return counts;
}

function plain(bytes: Buffer): Map<string, number> {
  const counts = new Map<string, number>();
  // It lower-cases the buffer it is given in place.
  countWords(Buffer.from(bytes), counts);
  return counts;
}

describe('the bench baseline, the plain word count', () => {
  test('counts the realistic corpus exactly as forEachWord', () => {
    const bytes = Buffer.from(zipfCorpusText(1_000_000, 3));
    expect(plain(bytes)).toEqual(reference(bytes));
  });

  test('counts ASCII text exactly as forEachWord', () => {
    const bytes = Buffer.from("Hello WORLD, don't 42x y'all\n\tA-b.c");
    expect(plain(bytes)).toEqual(reference(bytes));
  });

  test.each([1, 2, 3, 4, 5])('seed %i: counts random Unicode text exactly as forEachWord', (seed) => {
    const random = seededRandom(seed);
    const pieces = ['Word', 'ΟΔΟΣ', 'σς', 'İstanbul', 'e\u0301', '日本', '🙂', '𝐀𝐁c', '𐐀', "don't", ' ', '\n', 'ÀÉ', 'Ж', 'ǅ', '\u2014', '42', '\u212a'];
    const parts: Buffer[] = [];
    for (let i = 0; i < 4000; i++) parts.push(random() < 0.03 ? Buffer.from([0xe6, 0x97]) : Buffer.from(pieces[Math.floor(random() * pieces.length)]));
    const bytes = Buffer.concat(parts);
    expect(plain(bytes)).toEqual(reference(bytes));
  });
});

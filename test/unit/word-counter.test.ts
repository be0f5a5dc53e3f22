import { describe, expect, test } from 'vitest';
import { seededRandom, zipfCorpusText } from '../../src/job/Corpus.js';
import { forEachWord } from '../../src/job/Tokenizer.js';
import { WordCounter } from '../../src/job/builtins/wordcount/WordCounter.js';

/** The reference: the bytes decoded as a UTF-8 decoder does, then forEachWord. */
function referenceCounts(bytes: Buffer): Map<string, number> {
  const counts = new Map<string, number>();
  forEachWord(bytes.toString('utf8'), (word) => counts.set(word, (counts.get(word) ?? 0) + 1));
  return counts;
}

/** The bytes cut into chunks of whole lines, each of about `size` bytes or more. */
function lineChunks(bytes: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = [];
  let start = 0;
  while (start < bytes.length) {
    const newline = bytes.indexOf(0x0a, Math.min(bytes.length - 1, start + size));
    const end = newline < 0 ? bytes.length : newline + 1;
    chunks.push(bytes.subarray(start, end));
    start = end;
  }
  return chunks;
}

function counted(chunks: Uint8Array[]): Map<string, number> {
  const counter = new WordCounter();
  for (const chunk of chunks) counter.add(chunk);
  const counts = new Map<string, number>();
  counter.forEach((word, count) => {
    if (counts.has(word)) throw new Error(`${word} given twice`);
    counts.set(word, count);
  });
  return counts;
}

/** Random text made of pieces: ASCII words in all cases, digits, apostrophes, accents, combining marks, CJK, emoji, sigma, U+0130, Kelvin, separators. */
const UNICODE_PIECES = [
  'hello', 'WORLD', 'Word', "don't", "'", "''", 'x1', '42', 'a', 'Z',
  ' ', ' ', '  ', '\t', ',', '.', '-', '\n', '\n', '\r\n',
  'Éclair', 'café', 'CAFÉ', 'naïve', 'straße', 'STRASSE', 'ẞ', 'Ångström', 'œuvre', 'ÿ', 'Ÿ',
  'e\u0301', 'E\u0301', '\u0301', 'a\u0308b', 'Привет', 'мир', 'ЁЖИК', 'ёжик',
  'ΣΊΣΥΦΟΣ', 'ΟΔΟΣ', 'σς', 'Σ', 'İstanbul', 'I\u0307', 'ı', '\u212a', 'Kelvin\u212a', 'Å',
  '日本語', '東京', '中文', '。', '、', '\u3000', '１２３', 'Ａｂｃ',
  '🙂', '😀x', 'x🙂y', '𝐀𝐁', '𐐀𐐨', '\u00a0', '\u2014', '\u2019', '\u201d', '…', '\ufeff', '\ufffd', '٣', 'ǅ', 'ᾼ',
];

/** Bytes that are not valid UTF-8: a decoder makes U+FFFD of them (a separator). */
const INVALID_BYTES = [[0x80], [0xbf], [0xc0, 0xaf], [0xc1], [0xc3], [0xe6, 0x97], [0xe0, 0x80, 0x80], [0xed, 0xa0, 0x80], [0xf0, 0x9f], [0xf0, 0x9f, 0x99], [0xf4, 0x90, 0x80, 0x80], [0xff], [0xfe]];

function randomUnicodeBytes(random: () => number, pieces: number): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < pieces; i++) {
    const r = random();
    if (r < 0.05) parts.push(Buffer.from(INVALID_BYTES[Math.floor(random() * INVALID_BYTES.length)]));
    else if (r < 0.55) parts.push(Buffer.from(UNICODE_PIECES[Math.floor(random() * 20)]));
    else parts.push(Buffer.from(UNICODE_PIECES[Math.floor(random() * UNICODE_PIECES.length)]));
  }
  return Buffer.concat(parts);
}

function randomAsciiBytes(random: () => number, length: number): Buffer {
  const alphabet = "abcXYZ019'' ,.;-\t\n\n";
  let text = '';
  for (let i = 0; i < length; i++) text += alphabet[Math.floor(random() * alphabet.length)];
  return Buffer.from(text);
}

function expectSameCounts(actual: Map<string, number>, expected: Map<string, number>, label: string): void {
  const problems: string[] = [];
  for (const [word, count] of expected) if (actual.get(word) !== count) problems.push(`${JSON.stringify(word)}: ${actual.get(word)}, expected ${count}`);
  for (const word of actual.keys()) if (!expected.has(word)) problems.push(`${JSON.stringify(word)} is no word of the reference`);
  expect(problems.slice(0, 5), label).toEqual([]);
}

describe('WordCounter', () => {
  test.each(Array.from({ length: 20 }, (_, i) => i + 1))('seed %i: random ASCII text counts exactly as forEachWord, in chunks of whole lines of any size', (seed) => {
    const random = seededRandom(seed);
    const bytes = randomAsciiBytes(random, 20_000);
    const expected = referenceCounts(bytes);
    for (const size of [1, 7, 100, 1 << 16]) expectSameCounts(counted(lineChunks(bytes, size)), expected, `chunks of ${size}`);
  });

  test.each(Array.from({ length: 40 }, (_, i) => i + 1))('seed %i: random Unicode text with invalid bytes counts exactly as forEachWord over the decoded text', (seed) => {
    const random = seededRandom(1000 + seed);
    const bytes = randomUnicodeBytes(random, 5000);
    const expected = referenceCounts(bytes);
    const decoded = new Map<string, number>();
    forEachWord(new TextDecoder().decode(bytes), (word) => decoded.set(word, (decoded.get(word) ?? 0) + 1));
    expect([...decoded], 'TextDecoder and Buffer decode alike').toEqual([...expected]);
    for (const size of [1, 50, 1 << 16]) expectSameCounts(counted(lineChunks(bytes, size)), expected, `chunks of ${size}`);
  });

  test.each([1, 2, 3])('seed %i: random bytes, any of the 256, count exactly as forEachWord over the decoded text', (seed) => {
    const random = seededRandom(2000 + seed);
    const bytes = Buffer.alloc(50_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = random() < 0.5 ? 0x61 + Math.floor(random() * 3) : Math.floor(random() * 256);
    expectSameCounts(counted(lineChunks(bytes, 300)), referenceCounts(bytes), 'random bytes');
  });

  test('the realistic corpus counts exactly as forEachWord', () => {
    const bytes = Buffer.from(zipfCorpusText(2_000_000, 5));
    expectSameCounts(counted(lineChunks(bytes, 1 << 16)), referenceCounts(bytes), 'zipf corpus');
  });

  test('a word longer than the scratch buffer, ASCII or not, is counted whole', () => {
    const long = 'é'.repeat(5000) + 'A'.repeat(3000);
    const bytes = Buffer.from(`${long} x ${long}\nÀ${'b'.repeat(9000)}`);
    expectSameCounts(counted([bytes]), referenceCounts(bytes), 'long words');
  });

  test('a chunk may be a view into a larger buffer; a chunk that is not a Buffer is read the same', () => {
    const bytes = Buffer.from('zz Über ÜBER über zz\nzz');
    const backing = new Uint8Array(bytes.length + 10);
    backing.set(bytes, 5);
    const view = new Uint8Array(backing.buffer, 5, bytes.length);
    expect(counted([view])).toEqual(new Map([['zz', 3], ['über', 3]]));
  });

  test('size, words, entries(), addWord and clear', () => {
    const counter = new WordCounter();
    counter.add(Buffer.from('b a B\nÉté été'));
    counter.addWord('a', 5);
    counter.addWord('new');
    expect(counter.size).toBe(4);
    expect(counter.words).toBe(11);
    expect([...counter.entries()]).toEqual([['b', 2], ['a', 6], ['été', 2], ['new', 1]]);
    counter.clear();
    expect(counter.size).toBe(0);
    expect(counter.words).toBe(0);
    counter.add(Buffer.from('again'));
    expect([...counter.entries()]).toEqual([['again', 1]]);
  });

  test('a million distinct words grow the table and the arena, and every count stays right', () => {
    const counter = new WordCounter();
    const lines: string[] = [];
    for (let i = 0; i < 1_000_000; i++) lines.push(`w${i.toString(36)} ${i % 3 === 0 ? `W${i.toString(36).toUpperCase()}` : ''}`);
    counter.add(Buffer.from(lines.join('\n')));
    expect(counter.size).toBe(1_000_000);
    let wrong = 0;
    counter.forEach((word, count) => {
      const i = parseInt(word.slice(1), 36);
      if (count !== (i % 3 === 0 ? 2 : 1)) wrong++;
    });
    expect(wrong).toBe(0);
  });
});

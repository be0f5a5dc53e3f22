import fs from 'node:fs';
import path from 'node:path';

/** mulberry32: a small seeded PRNG, so generated data is the same on every run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'do', 'fi', 'gu', 'he', 'ja', 'qu'];

/** A vocabulary of distinct pseudo-words, shortest first. */
export function vocabulary(size: number, random: () => number): string[] {
  const words = new Set<string>();
  while (words.size < size) {
    const syllables = 1 + Math.floor(random() * 4);
    let word = '';
    for (let i = 0; i < syllables; i++) word += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
    words.add(word);
  }
  return [...words];
}

/**
 * Deterministic text of about `bytes` bytes: words drawn with a Zipf-like skew from
 * a vocabulary (a few very common words, a long tail), lines of 5 to 15 words, some
 * words capitalized or followed by punctuation so that a tokenizer has work to do.
 */
export function corpusText(bytes: number, seed = 1, vocabularySize = 20_000): string {
  const random = seededRandom(seed);
  const words = vocabulary(vocabularySize, random);
  const lines: string[] = [];
  let size = 0;
  while (size < bytes) {
    const count = 5 + Math.floor(random() * 11);
    const line: string[] = [];
    for (let i = 0; i < count; i++) {
      // Squaring a uniform draw favours low ranks: a cheap Zipf-like skew.
      const r = random();
      let word = words[Math.floor(r * r * r * words.length)];
      if (random() < 0.05) word = word[0].toUpperCase() + word.slice(1);
      if (random() < 0.05) word += random() < 0.5 ? ',' : '.';
      line.push(word);
    }
    const text = line.join(' ');
    lines.push(text);
    size += text.length + 1;
  }
  return lines.join('\n') + '\n';
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';
// Weighted like English text, so words look and compress like words: vowels and common consonants more often.
const LETTER_WEIGHTS = [8, 1.5, 2.8, 4.3, 12.7, 2.2, 2, 6.1, 7, 0.2, 0.8, 4, 2.4, 6.7, 7.5, 1.9, 0.1, 6, 6.3, 9.1, 2.8, 1, 2.4, 0.2, 2, 0.1];
const ACCENTED = 'áàâäãåæçéèêëíìîïñóòôöõøœúùûüýÿßđłšžčř';
const CYRILLIC = 'абвгдежзийклмнопрстуфхцчшщъыьэюяё';
/** Non-ASCII words: accented Latin, Cyrillic and CJK, one in 20 vocabulary ranks (about 5% of the words of the text). */
const NON_ASCII_EVERY = 20;

/** The realistic corpus's vocabulary: distinct words of 3 to 12 letters, one in 20 (from rank 8 on) not ASCII. */
export function zipfVocabulary(size: number, random: () => number): string[] {
  const cumulative: number[] = [];
  let sum = 0;
  for (const w of LETTER_WEIGHTS) cumulative.push((sum += w));
  const letter = (): string => {
    const r = random() * sum;
    let i = 0;
    while (cumulative[i] < r) i++;
    return LETTERS[i];
  };
  const pick = (alphabet: string): string => alphabet[Math.floor(random() * alphabet.length)];
  const words = new Set<string>();
  const list: string[] = [];
  while (list.length < size) {
    const length = 3 + Math.floor(random() * 10);
    let word = '';
    if (list.length % NON_ASCII_EVERY !== 7) {
      for (let i = 0; i < length; i++) word += letter();
    } else {
      const kind = random();
      if (kind < 0.5) {
        // Accented Latin: a Latin word with one to three accented letters.
        for (let i = 0; i < length; i++) word += i > 0 && random() < 0.25 ? pick(ACCENTED) : letter();
        if (!/[^a-z]/.test(word)) word = word.slice(0, -1) + pick(ACCENTED);
      } else if (kind < 0.8) {
        for (let i = 0; i < length; i++) word += pick(CYRILLIC);
      } else {
        // CJK: 1 to 4 ideographs, written without spaces between words in real text, here with.
        const ideographs = 1 + Math.floor(random() * 4);
        for (let i = 0; i < ideographs; i++) word += String.fromCharCode(0x4e00 + Math.floor(random() * 0x5000));
      }
    }
    if (words.has(word)) continue;
    words.add(word);
    list.push(word);
  }
  return list;
}

/**
 * Deterministic text of about `bytes` UTF-8 bytes shaped like real text for word
 * count: words drawn with Zipf's law (s = 1: rank r has weight 1/r) over a vocabulary
 * of `vocabularySize` words of 3 to 12 letters, about 5% of them accented Latin,
 * Cyrillic or CJK; lines of 5 to 15 words; about 5% of the words capitalized and 5%
 * followed by punctuation (ASCII, or now and then a non-ASCII dash or quote).
 */
export function zipfCorpusText(bytes: number, seed = 1, vocabularySize = 50_000): string {
  const random = seededRandom(seed);
  const words = sharedVocabulary(vocabularySize);
  const cumulative = new Float64Array(words.length);
  let sum = 0;
  for (let r = 0; r < words.length; r++) cumulative[r] = sum += 1 / (r + 1);
  const draw = (): string => {
    const target = random() * sum;
    let lo = 0;
    let hi = words.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    return words[lo];
  };
  const punctuation = [',', '.', ';', ':', '!', '?', "'s", ' -', ' —', '”', '…'];
  const lines: string[] = [];
  let size = 0;
  while (size < bytes) {
    const count = 5 + Math.floor(random() * 11);
    let line = '';
    for (let i = 0; i < count; i++) {
      let word = draw();
      if (random() < 0.05) word = word[0].toUpperCase() + word.slice(1);
      if (random() < 0.05) word += punctuation[Math.floor(random() * punctuation.length)];
      line += i === 0 ? word : ' ' + word;
    }
    lines.push(line);
    size += Buffer.byteLength(line) + 1;
  }
  return lines.join('\n') + '\n';
}

const vocabularies = new Map<number, string[]>();

/** One vocabulary per size whatever the seed, so that every file of a corpus draws from the same words. */
function sharedVocabulary(size: number): string[] {
  let words = vocabularies.get(size);
  if (!words) vocabularies.set(size, (words = zipfVocabulary(size, seededRandom(0x5eed))));
  return words;
}

/** How a corpus file's text is made: `(bytes, seed) => text`. */
export type CorpusGenerator = (bytes: number, seed: number) => string;

/** Writes `files` corpus files of about `bytesPerFile` each into dir (by default the simple corpusText); returns their paths. */
export function writeCorpus(dir: string, files: number, bytesPerFile: number, seed = 1, generate: CorpusGenerator = corpusText): string[] {
  fs.mkdirSync(dir, { recursive: true });
  const paths: string[] = [];
  for (let i = 0; i < files; i++) {
    const file = path.join(dir, `part-${String(i).padStart(3, '0')}.txt`);
    fs.writeFileSync(file, generate(bytesPerFile, seed + i));
    paths.push(file);
  }
  return paths;
}

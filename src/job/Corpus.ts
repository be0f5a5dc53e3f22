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

/** Writes `files` corpus files of about `bytesPerFile` each into dir; returns their paths. */
export function writeCorpus(dir: string, files: number, bytesPerFile: number, seed = 1): string[] {
  fs.mkdirSync(dir, { recursive: true });
  const paths: string[] = [];
  for (let i = 0; i < files; i++) {
    const file = path.join(dir, `part-${String(i).padStart(3, '0')}.txt`);
    fs.writeFileSync(file, corpusText(bytesPerFile, seed + i));
    paths.push(file);
  }
  return paths;
}

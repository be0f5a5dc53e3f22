/** Words are maximal runs of letters, digits and apostrophes, lower-cased. */
const WORD = /[\p{L}\p{N}']+/gu;

/**
 * Calls fn with every word of the text, in order, as forEachWord does. ASCII is
 * scanned by char code, with no regex match and no lower-cased copy of the text:
 * only a word with an upper-case letter is lower-cased. From the first non-ASCII
 * character on (the word it is part of included), the reference tokenizer takes over.
 */
export function scanWords(text: string, fn: (word: string) => void): void {
  let start = -1;
  let upper = false;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 39) {
      if (start < 0) start = i;
    } else if (c >= 65 && c <= 90) {
      if (start < 0) start = i;
      upper = true;
    } else if (c >= 128) {
      forEachWord(start < 0 ? text.slice(i) : text.slice(start), fn);
      return;
    } else if (start >= 0) {
      const word = text.slice(start, i);
      fn(upper ? word.toLowerCase() : word);
      start = -1;
      upper = false;
    }
  }
  if (start >= 0) {
    const word = text.slice(start);
    fn(upper ? word.toLowerCase() : word);
  }
}

/** Calls fn with every word of the text, in order: the simple reference tokenizer. */
export function forEachWord(text: string, fn: (word: string) => void): void {
  for (const match of text.matchAll(WORD)) fn(match[0].toLowerCase());
}

const WORD_CHAR = /^[\p{L}\p{N}']$/u;

/** What a BMP code point is to the tokenizer, looked up lazily: 0 not yet known, 1 a separator, 2 a word character. */
const BMP_KIND = new Uint8Array(0x10000);
/**
 * The lower case of a BMP word character as one code point, or -1 where it is not one
 * context-free code point (U+0130 lower-cases to two; U+03A3 depends on its position
 * in the word, Final_Sigma), so a caller must lower-case the whole word instead.
 */
const BMP_LOWER = new Int32Array(0x10000);

/**
 * True if the code point is part of a word for forEachWord (a letter, a digit or an
 * apostrophe). Each BMP code point is classified once, then read from a table.
 */
export function isWordCodePoint(cp: number): boolean {
  if (cp >= 0x10000) return WORD_CHAR.test(String.fromCodePoint(cp));
  let kind = BMP_KIND[cp];
  if (kind === 0) kind = classify(cp);
  return kind === 2;
}

/**
 * The lower case of a word code point when it is a single code point whatever the
 * rest of the word, as toLowerCase makes it; -1 otherwise (the caller then lower-cases
 * the whole word with toLowerCase). Only for code points isWordCodePoint accepts.
 */
export function lowerWordCodePoint(cp: number): number {
  if (cp >= 0x10000) return -1;
  if (BMP_KIND[cp] === 0) classify(cp);
  return BMP_LOWER[cp];
}

function classify(cp: number): number {
  // Lone surrogates never come out of a UTF-8 decoder (it makes U+FFFD of their bytes).
  const char = String.fromCharCode(cp);
  const word = cp < 0xd800 || cp > 0xdfff ? WORD_CHAR.test(char) : false;
  const lower = char.toLowerCase();
  BMP_LOWER[cp] = word && lower.length === 1 && cp !== 0x03a3 ? lower.charCodeAt(0) : -1;
  BMP_KIND[cp] = word ? 2 : 1;
  return BMP_KIND[cp];
}

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

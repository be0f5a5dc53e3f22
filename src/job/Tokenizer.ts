/** Words are maximal runs of letters, digits and apostrophes, lower-cased. */
const WORD = /[\p{L}\p{N}']+/gu;
const NON_ASCII = /[^ -~\t\n\r]/u;

/** The words of a text, in order. ASCII text is scanned by char code, without a regex match object per word. */
export function words(text: string): string[] {
  if (NON_ASCII.test(text)) return Array.from(text.matchAll(WORD), (match) => match[0].toLowerCase());
  const lower = text.toLowerCase();
  const found: string[] = [];
  let start = -1;
  for (let i = 0; i < lower.length; i++) {
    const c = lower.charCodeAt(i);
    // a-z, 0-9 and the apostrophe (upper case is gone after toLowerCase).
    const inWord = (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 39;
    if (inWord) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      found.push(lower.slice(start, i));
      start = -1;
    }
  }
  if (start >= 0) found.push(lower.slice(start));
  return found;
}

/** Calls fn with every word of the text, in order: the simple reference tokenizer. */
export function forEachWord(text: string, fn: (word: string) => void): void {
  for (const match of text.matchAll(WORD)) fn(match[0].toLowerCase());
}

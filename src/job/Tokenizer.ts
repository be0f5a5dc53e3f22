/** Words are maximal runs of letters, digits and apostrophes, lower-cased. */
const WORD = /[\p{L}\p{N}']+/gu;

/** Calls fn with every word of the text, in order. */
export function forEachWord(text: string, fn: (word: string) => void): void {
  for (const match of text.matchAll(WORD)) fn(match[0].toLowerCase());
}

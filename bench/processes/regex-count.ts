/**
 * The word count of examples/wordcount.ts as a user would write it with no engine:
 * `node regex-count.js FILE...` reads each file, finds the words of each line with the
 * example's regex, lower-cases them and counts them in a Map, and sends the Map to its
 * parent over IPC (advanced serialization), then exits. bench/exampleWordCount.ts runs
 * two of these over half the corpus each.
 */
import fs from 'node:fs';

/** The example's tokenizer, copied: the bench checks that both count the same words. */
const WORD = /[\p{L}\p{N}']+/gu;

function count(files: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const file of files) {
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      for (const [found] of line.matchAll(WORD)) {
        const word = found.toLowerCase();
        counts.set(word, (counts.get(word) ?? 0) + 1);
      }
    }
  }
  return counts;
}

process.send?.(count(process.argv.slice(2)), () => process.disconnect());

import fs from 'node:fs';
import path from 'node:path';

const CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;
const ZERO = 0x30;
const NINE = 0x39;

/**
 * Reads the part files of a text sink in order (part-00000, part-00001, ...), a chunk
 * at a time, and passes each line's unsigned integers (its runs of digits, in order)
 * to `onLine`; stops at the first fault `onLine` returns and resolves with it, else
 * null. For checking the output of big jobs: nothing is held but a chunk, and no
 * string is made per line.
 */
export function scanPartFiles(dir: string, onLine: (numbers: readonly number[], file: string) => string | null): string | null {
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  const numbers: number[] = [];
  for (const file of fs.readdirSync(dir).filter((f) => f.startsWith('part-')).sort()) {
    const fd = fs.openSync(path.join(dir, file), 'r');
    try {
      let value = -1;
      for (let n = fs.readSync(fd, chunk); n > 0; n = fs.readSync(fd, chunk)) {
        for (let i = 0; i < n; i++) {
          const c = chunk[i];
          if (c >= ZERO && c <= NINE) {
            value = value < 0 ? c - ZERO : value * 10 + (c - ZERO);
            continue;
          }
          if (value >= 0) numbers.push(value);
          value = -1;
          if (c !== NEWLINE) continue;
          const fault = onLine(numbers, file);
          if (fault !== null) return fault;
          numbers.length = 0;
        }
      }
      if (value >= 0 || numbers.length > 0) return `${file} does not end with a newline`;
    } finally {
      fs.closeSync(fd);
    }
  }
  return null;
}

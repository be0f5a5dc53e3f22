import fs from 'node:fs';
import path from 'node:path';

/** A byte range of one file; it owns every line that starts inside it. */
export interface TextSplit {
  file: string;
  start: number;
  end: number;
}

/** The files an input names: a file, every file of a folder, or a glob in the last path part (`*`, `?`). */
export function listInputFiles(input: string): string[] {
  const stat = statOrNull(input);
  if (stat?.isFile()) return [input];
  if (stat?.isDirectory()) return filesIn(input, () => true);
  const base = path.basename(input);
  if (/[*?]/.test(base)) {
    const dir = path.dirname(input);
    if (!statOrNull(dir)?.isDirectory()) throw new Error(`input folder ${dir} does not exist`);
    const pattern = new RegExp(`^${base.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
    const files = filesIn(dir, (name) => pattern.test(name));
    if (files.length === 0) throw new Error(`input ${input} matches no file`);
    return files;
  }
  throw new Error(`input ${input} does not exist`);
}

/** Cuts the files into about equal byte ranges and gives subtask i of n its contiguous share. */
export function splitsFor(files: string[], subtask: number, parallelism: number): TextSplit[] {
  const sizes = files.map((file) => fs.statSync(file).size);
  const total = sizes.reduce((a, b) => a + b, 0);
  const share = Math.max(1, Math.ceil(total / parallelism));
  const from = subtask * share;
  const to = Math.min(total, from + share);
  const splits: TextSplit[] = [];
  let offset = 0;
  files.forEach((file, i) => {
    const start = Math.max(from, offset) - offset;
    const end = Math.min(to, offset + sizes[i]) - offset;
    if (start < end) splits.push({ file, start, end });
    offset += sizes[i];
  });
  return splits;
}

const CHUNK = 1 << 20;
const NEWLINE = 0x0a;

/**
 * Calls onLine with each line (without its newline) that starts in the split. A split
 * that does not begin a file skips the line in progress, which the previous split
 * reads to its end, so no line is cut or read twice.
 */
export async function readLines(split: TextSplit, onLine: (line: string) => void | Promise<void>): Promise<void> {
  const handle = await fs.promises.open(split.file, 'r');
  try {
    let position = split.start === 0 ? 0 : split.start - 1;
    let skipping = split.start !== 0;
    let lineStart = position;
    let pending: Buffer = Buffer.alloc(0);
    for (;;) {
      if (!skipping && lineStart >= split.end) return;
      const chunk = Buffer.allocUnsafe(CHUNK);
      const { bytesRead } = await handle.read(chunk, 0, CHUNK, position);
      if (bytesRead === 0) break;
      const data = pending.length > 0 ? Buffer.concat([pending, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
      const dataStart = position - pending.length;
      position += bytesRead;
      let cursor = 0;
      for (;;) {
        const newline = data.indexOf(NEWLINE, cursor);
        if (newline < 0) break;
        if (skipping) skipping = false;
        else {
          const waiting = onLine(data.toString('utf8', cursor, newline));
          if (waiting) await waiting;
        }
        cursor = newline + 1;
        lineStart = dataStart + cursor;
        if (lineStart >= split.end) return;
      }
      pending = data.subarray(cursor);
    }
    if (!skipping && pending.length > 0 && lineStart < split.end) {
      const waiting = onLine(pending.toString('utf8'));
      if (waiting) await waiting;
    }
  } finally {
    await handle.close();
  }
}

function filesIn(dir: string, accept: (name: string) => boolean): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.startsWith('.') && accept(entry.name))
    .map((entry) => path.join(dir, entry.name))
    .sort();
}

function statOrNull(p: string): fs.Stats | null {
  try {
    return fs.statSync(p);
  } catch {
    return null;
  }
}

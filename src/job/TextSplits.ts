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
 * reads to its end, so no line is cut or read twice. Whole runs of lines are decoded
 * at once, not line by line.
 */
export async function readLines(
  split: TextSplit,
  onLine: (line: string) => void | Promise<void>,
  chunkSize = CHUNK,
): Promise<void> {
  const handle = await fs.promises.open(split.file, 'r');
  try {
    let position = split.start === 0 ? 0 : split.start - 1;
    let skipping = split.start !== 0;
    let pending: Buffer = Buffer.alloc(0);
    for (;;) {
      const chunk = Buffer.allocUnsafe(chunkSize);
      const { bytesRead } = await handle.read(chunk, 0, chunkSize, position);
      const data = pending.length > 0 ? Buffer.concat([pending, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
      const dataStart = position - pending.length;
      position += bytesRead;
      if (bytesRead === 0) {
        // The file's last line has no newline.
        if (!skipping && data.length > 0 && dataStart < split.end) await emitLines(data.toString('utf8'), onLine);
        return;
      }
      let cursor = 0;
      if (skipping) {
        const newline = data.indexOf(NEWLINE);
        if (newline < 0) {
          pending = Buffer.alloc(0);
          continue;
        }
        cursor = newline + 1;
        skipping = false;
      }
      if (dataStart + cursor >= split.end) return;
      // Our last line ends at the first newline at or after split.end - 1.
      const stop = data.indexOf(NEWLINE, Math.max(cursor, split.end - 1 - dataStart));
      const last = stop >= 0 ? stop : data.lastIndexOf(NEWLINE);
      if (last >= cursor) {
        await emitLines(data.toString('utf8', cursor, last), onLine);
        cursor = last + 1;
      }
      if (stop >= 0) return;
      pending = data.subarray(cursor);
    }
  } finally {
    await handle.close();
  }
}

/** Calls onLine with each line of text (lines separated by newlines, none at the end). */
async function emitLines(text: string, onLine: (line: string) => void | Promise<void>): Promise<void> {
  let from = 0;
  for (;;) {
    const newline = text.indexOf('\n', from);
    const waiting = onLine(newline < 0 ? text.slice(from) : text.slice(from, newline));
    if (waiting) await waiting;
    if (newline < 0) return;
    from = newline + 1;
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

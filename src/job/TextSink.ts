import fs from 'node:fs';
import path from 'node:path';

/** Committed output files: `part-00000`, one per sink subtask. */
const PART_FILE = /^part-\d{5}$/;

export function partFileName(subtask: number): string {
  return `part-${String(subtask).padStart(5, '0')}`;
}

/** The hidden file one attempt writes; it becomes `part-NNNNN` only when its job finishes. */
export function attemptFileName(jobId: string, subtask: number, attempt: number): string {
  return `.${jobId}.${partFileName(subtask)}.${attempt}.inprogress`;
}

/** A text sink as a task drives it: records in, then end (all written and closed) or abort (file removed). */
export interface TextSinkWriter {
  push(record: unknown): void | Promise<void>;
  end(): Promise<void>;
  abort(): void;
}

/**
 * Opens a text sink's attempt file (Hadoop's FileOutputCommitter idea: each attempt
 * writes aside, the job's commit renames). One record a line, `key<TAB>value` for a
 * pair. Any file system error fails at once, naming the path and the OS error.
 */
export async function openTextSink(dir: string, jobId: string, subtask: number, attempt: number): Promise<TextSinkWriter> {
  try {
    makeFolder(dir);
  } catch (error) {
    throw new Error(`the text sink cannot create its folder ${dir}: ${(error as Error).message}`, { cause: error });
  }
  const file = path.join(dir, attemptFileName(jobId, subtask, attempt));
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, 'w');
  } catch (error) {
    throw new Error(`the text sink cannot open ${file}: ${(error as Error).message}`, { cause: error });
  }
  let pending = '';
  let closed = false;
  const flush = async (): Promise<void> => {
    const text = pending;
    pending = '';
    try {
      await handle.write(text);
    } catch (error) {
      throw new Error(`the text sink cannot write ${file}: ${(error as Error).message}`, { cause: error });
    }
  };
  return {
    push(record) {
      pending += (Array.isArray(record) && record.length === 2 ? `${record[0]}\t${record[1]}` : JSON.stringify(record)) + '\n';
      if (pending.length >= 1 << 16) return flush();
    },
    async end() {
      await flush();
      closed = true;
      await handle.close();
    },
    abort() {
      if (!closed) void handle.close().catch(() => {});
      closed = true;
      fs.rmSync(file, { force: true });
    },
  };
}

/**
 * mkdir -p, one level at a time. Node's own recursive mkdir loops forever where the
 * kernel answers ENOENT for a folder whose parent exists (under /proc, say).
 */
function makeFolder(dir: string): void {
  try {
    fs.mkdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' && fs.statSync(dir).isDirectory()) return;
    if (code !== 'ENOENT' || path.dirname(dir) === dir) throw error;
    makeFolder(path.dirname(dir));
    fs.mkdirSync(dir);
  }
}

/**
 * Commits a finished job's text output: the attempt file of each subtask's last
 * attempt (`attempts[subtask]`) becomes its `part-NNNNN`; part files of an earlier
 * run and every other attempt file of the job go. Throws, naming the file, if one is missing.
 */
export function commitTextOutput(dir: string, jobId: string, attempts: readonly number[]): void {
  const files = attempts.map((attempt, subtask) => path.join(dir, attemptFileName(jobId, subtask, attempt)));
  const missing = files.find((file) => !fs.existsSync(file));
  if (missing !== undefined) throw new Error(`the text sink's output ${missing} is missing: it cannot be committed`);
  for (const name of fs.readdirSync(dir)) if (PART_FILE.test(name)) fs.rmSync(path.join(dir, name), { force: true });
  files.forEach((file, subtask) => fs.renameSync(file, path.join(dir, partFileName(subtask))));
  abortTextOutput(dir, jobId);
}

/** Removes every attempt file of a job from a text sink's folder (a failed or canceled job writes nothing). */
export function abortTextOutput(dir: string, jobId: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) if (name.startsWith(`.${jobId}.`)) fs.rmSync(path.join(dir, name), { force: true });
}

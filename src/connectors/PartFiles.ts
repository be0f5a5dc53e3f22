import fs from 'node:fs';
import path from 'node:path';
import { SpillwayError } from '../errors/Errors.js';
import type { SinkContext, SinkWriter } from './SinkSpec.js';

/**
 * The commit protocol of every sink that writes files (text, JSON Lines, CSV, Parquet).
 *
 * - A bounded job without checkpoints (Hadoop's FileOutputCommitter idea): each attempt
 *   of a subtask writes a hidden file of its own, `.<jobId>.part-NNNNN.<attempt>.inprogress`;
 *   when the job finishes, the JobManager renames each subtask's last attempt to
 *   `part-NNNNN` (with the format's or compression's extension, `part-00000.gz`).
 * - A job with checkpoints (two-phase commit, as Flink's FileSink): records go to a
 *   hidden in-progress file, which each checkpoint closes and sets aside as pending
 *   (`.<jobId>.part-NNNNN.<attempt>.<checkpoint>.pending`, its transaction); when the
 *   checkpoint completes it is renamed `part-NNNNN-<jobId>-<checkpoint>`. What comes
 *   after the last checkpoint of an input that ends is the attempt's file, committed
 *   when the job finishes with the pending files its checkpoints had not yet committed.
 * - An unbounded job without checkpoints: the in-progress file rolls every
 *   ROLL_INTERVAL_MS and is renamed `part-NNNNN-<jobId>-<attempt>-r<n>` at once (at
 *   least once: a restart writes again what its source reads again).
 *
 * A failed or canceled job's hidden files are removed. Readers skip names starting
 * with `.`, so nothing half-written or uncommitted is read.
 */

/** Committed output files of a bounded job: `part-00000`, one per sink subtask, with any extension. */
const PART_FILE = /^part-\d{5}(\.[\w.]+)?$/;

/** How often an unbounded job's file sink without checkpoints makes what it wrote visible. */
export const ROLL_INTERVAL_MS = 10_000;

/** One part file being written: records in, then closed (complete on disk) or dropped. */
export interface PartFile {
  push(record: unknown): void | Promise<void>;
  /** Writes what it holds and closes the file: it is complete. */
  close(): Promise<void>;
  /** Closes the file and deletes it. Never throws. */
  abort(): void;
  /** Whether no record was pushed. */
  readonly empty: boolean;
}

/** How a sink writes one part file at a path; fails with SPW_ERR_SINK_IO. */
export type OpenPartFile = (file: string) => Promise<PartFile>;

/** A checkpoint's transaction of a file sink: the pending file and the name it gets when committed. */
interface FileTransaction {
  pending: string;
  part: string;
}

export function partFileName(subtask: number, extension = ''): string {
  return `part-${String(subtask).padStart(5, '0')}${extension}`;
}

/** The hidden file one attempt writes; it becomes `part-NNNNN` only when its job finishes. */
export function attemptFileName(jobId: string, subtask: number, attempt: number): string {
  return `.${jobId}.${partFileName(subtask)}.${attempt}.inprogress`;
}

/** Lists the pending files an attempt's checkpoints had not committed when its input ended: the JobManager commits them with it. */
function manifestName(jobId: string, subtask: number, attempt: number): string {
  return `.${jobId}.${partFileName(subtask)}.${attempt}.commits`;
}

/**
 * Makes a sink's folder (mkdir -p), failing with SPW_ERR_SINK_IO. `what` names the sink
 * in errors ("the CSV sink").
 */
function sinkFolder(what: string, dir: string): void {
  try {
    makeFolder(dir);
  } catch (error) {
    throw new SpillwayError('SPW_ERR_SINK_IO', `${what} cannot create its folder ${dir}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Opens a file sink's writer in one subtask's attempt, committing as the job needs (see
 * above); `open` writes one part file of the sink's format, `extension` ends its
 * committed name.
 */
export async function openPartSink(what: string, dir: string, context: SinkContext, extension: string, open: OpenPartFile): Promise<SinkWriter> {
  sinkFolder(what, dir);
  if (context.bounded && !context.checkpointed) {
    const file = await open(path.join(dir, attemptFileName(context.jobId, context.subtask, context.attempt)));
    return { push: (record) => file.push(record), end: () => file.close(), abort: () => file.abort() };
  }
  return new RollingPartSink(what, dir, context, extension, open).writer();
}

/** The part files of a job with checkpoints, or an unbounded one: one in progress at a time, rolled at checkpoints (or every ROLL_INTERVAL_MS). */
class RollingPartSink {
  private current: PartFile | null = null;
  private currentName = '';
  private opened = 0;
  private rolled = 0;
  /** Transactions prepared and not yet committed, by checkpoint id. */
  private readonly uncommitted = new Map<number, FileTransaction>();
  private readonly prefix: string;

  constructor(
    private readonly what: string,
    private readonly dir: string,
    private readonly context: SinkContext,
    private readonly extension: string,
    private readonly open: OpenPartFile,
  ) {
    const { jobId, subtask, attempt } = context;
    this.prefix = `.${jobId}.${partFileName(subtask)}.${attempt}`;
    this.removeAbandoned();
  }

  writer(): SinkWriter {
    if (!this.context.checkpointed) this.context.every(ROLL_INTERVAL_MS, () => this.roll());
    const writer: SinkWriter = {
      push: (record) => (this.current === null ? this.openCurrent().then((file) => file.push(record)) : this.current.push(record)),
      end: () => this.end(),
      abort: () => {
        this.current?.abort();
        this.current = null;
      },
    };
    if (!this.context.checkpointed) return writer;
    return { ...writer, prepareCommit: (id) => this.prepare(id), commit: (id, transaction) => this.commit(id, transaction as FileTransaction | null) };
  }

  private async openCurrent(): Promise<PartFile> {
    this.currentName = `${this.prefix}.${this.opened++}.inprogress`;
    this.current = await this.open(path.join(this.dir, this.currentName));
    return this.current;
  }

  /** Closes the file in progress; its name, or null if it held nothing (then deleted). */
  private async closeCurrent(): Promise<string | null> {
    const file = this.current;
    this.current = null;
    if (file === null) return null;
    if (file.empty) {
      file.abort();
      return null;
    }
    await file.close();
    return this.currentName;
  }

  /** Checkpoint `id` is taken: the file in progress is set aside, its transaction. */
  private async prepare(id: number): Promise<FileTransaction | null> {
    const closed = await this.closeCurrent();
    if (closed === null) return null;
    const { jobId, subtask } = this.context;
    const transaction = { pending: `${this.prefix}.${id}.pending`, part: `${partFileName(subtask)}-${jobId}-${id}${this.extension}` };
    this.rename(closed, transaction.pending);
    this.uncommitted.set(id, transaction);
    return transaction;
  }

  /** Checkpoint `id` completed: its pending file becomes visible; a repeat (after a restore) finds it done. */
  private async commit(id: number, transaction: FileTransaction | null): Promise<void> {
    this.uncommitted.delete(id);
    if (transaction === null) return;
    commitPending(this.what, this.dir, transaction);
  }

  /** No checkpoints: what the file in progress holds becomes visible now. */
  private async roll(): Promise<void> {
    const closed = await this.closeCurrent();
    if (closed === null) return;
    const { jobId, subtask, attempt } = this.context;
    this.rename(closed, `${partFileName(subtask)}-${jobId}-${attempt}-r${this.rolled++}${this.extension}`);
  }

  /**
   * The input ended: what came after the last checkpoint becomes the attempt's file, and
   * the transactions not yet committed are listed beside it; the JobManager commits
   * both when the job finishes. Without checkpoints, the last roll.
   */
  private async end(): Promise<void> {
    const { jobId, subtask, attempt } = this.context;
    const attemptFile = attemptFileName(jobId, subtask, attempt);
    if (!this.context.checkpointed) await this.roll();
    const closed = await this.closeCurrent();
    if (closed !== null) this.rename(closed, attemptFile);
    else await (await this.open(path.join(this.dir, attemptFile))).close();
    const manifest = path.join(this.dir, manifestName(jobId, subtask, attempt));
    try {
      fs.writeFileSync(manifest, JSON.stringify([...this.uncommitted.values()]));
    } catch (error) {
      throw new SpillwayError('SPW_ERR_SINK_IO', `${this.what} cannot write ${manifest}: ${(error as Error).message}`, { cause: error });
    }
  }

  /** A restarted subtask removes the files its earlier attempts had in progress: nothing commits them. */
  private removeAbandoned(): void {
    const { jobId, subtask, attempt } = this.context;
    const mine = `.${jobId}.${partFileName(subtask)}.`;
    for (const name of listFolder(this.dir)) {
      if (name.startsWith(mine) && name.endsWith('.inprogress') && !name.startsWith(`${mine}${attempt}.`)) fs.rmSync(path.join(this.dir, name), { force: true });
    }
  }

  private rename(from: string, to: string): void {
    try {
      fs.renameSync(path.join(this.dir, from), path.join(this.dir, to));
    } catch (error) {
      throw new SpillwayError('SPW_ERR_SINK_IO', `${this.what} cannot rename ${path.join(this.dir, from)} to ${to}: ${(error as Error).message}`, { cause: error });
    }
  }
}

/** Renames a transaction's pending file to its part name; done already if only the part is there. Throws SPW_ERR_COMMIT if neither is. */
function commitPending(what: string, dir: string, { pending, part }: FileTransaction): void {
  try {
    fs.renameSync(path.join(dir, pending), path.join(dir, part));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && fs.existsSync(path.join(dir, part))) return;
    throw new SpillwayError('SPW_ERR_COMMIT', `${what} cannot commit ${path.join(dir, pending)} as ${part}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Commits a finished job's output: the attempt file of each subtask's last attempt
 * (`attempts[subtask]`) becomes its `part-NNNNN<extension>`, with the pending files its
 * checkpoints had not committed; part files of an earlier run and every other hidden
 * file of the job go. Throws SPW_ERR_COMMIT, naming the file, if one is missing; with
 * `sparse` (a partition's folder, which only the subtasks that had its records wrote to),
 * a subtask that left neither file nor manifest there is passed over.
 */
export function commitPartFiles(what: string, dir: string, jobId: string, attempts: readonly number[], extension = '', sparse = false): void {
  const wrote = (attempt: number, subtask: number): boolean => !sparse || fs.existsSync(path.join(dir, attemptFileName(jobId, subtask, attempt))) || fs.existsSync(path.join(dir, manifestName(jobId, subtask, attempt)));
  const files = attempts.map((attempt, subtask) => (wrote(attempt, subtask) ? path.join(dir, attemptFileName(jobId, subtask, attempt)) : undefined));
  const missing = files.find((file) => file !== undefined && !fs.existsSync(file));
  if (missing !== undefined) throw new SpillwayError('SPW_ERR_COMMIT', `${what}'s output ${missing} is missing: it cannot be committed`);
  for (const name of listFolder(dir)) if (PART_FILE.test(name)) fs.rmSync(path.join(dir, name), { force: true });
  attempts.forEach((attempt, subtask) => {
    const manifest = path.join(dir, manifestName(jobId, subtask, attempt));
    if (!fs.existsSync(manifest)) return;
    for (const transaction of JSON.parse(fs.readFileSync(manifest, 'utf8')) as FileTransaction[]) commitPending(what, dir, transaction);
  });
  files.forEach((file, subtask) => file !== undefined && fs.renameSync(file, path.join(dir, partFileName(subtask, extension))));
  abortPartFiles(dir, jobId);
}

/** Removes every hidden file of a job from a sink's folder (a failed or canceled job commits nothing more). */
export function abortPartFiles(dir: string, jobId: string): void {
  for (const name of listFolder(dir)) if (name.startsWith(`.${jobId}.`)) fs.rmSync(path.join(dir, name), { force: true });
}

function listFolder(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
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

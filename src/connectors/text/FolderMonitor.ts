import fs from 'node:fs';
import path from 'node:path';
import { SpillwayError } from '../../errors/Errors.js';
import type { SplitSupply } from '../SplitAssigner.js';
import type { TextSplit } from './TextSplits.js';

/**
 * A watched folder's splits (Flink's FileSource.monitorContinuously): each take()
 * lists the folder and hands out every file not seen before, whole, oldest first (by
 * modification time, then name). Files whose names start with `.` are not read: a
 * writer writes under such a name and renames the file when it is complete, so a
 * file is never read while it is written.
 */
export class FolderMonitor implements SplitSupply<TextSplit> {
  private readonly seen = new Set<string>();

  constructor(private readonly folder: string) {}

  /** Throws SPW_ERR_SOURCE_IO unless `folder` is a folder. */
  static check(folder: string): void {
    let stat: fs.Stats;
    try {
      stat = fs.statSync(folder);
    } catch (error) {
      throw new SpillwayError('SPW_ERR_SOURCE_IO', `the monitored folder ${folder} cannot be read: ${(error as Error).message}`, { cause: error });
    }
    if (!stat.isDirectory()) throw new SpillwayError('SPW_ERR_SOURCE_IO', `a monitored input must be a folder, and ${folder} is not one`);
  }

  /** The files it handed out: a restore hands out every other one it finds. */
  snapshot(): unknown {
    return [...this.seen];
  }

  restore(state: unknown): void {
    this.seen.clear();
    for (const name of state as string[]) this.seen.add(name);
  }

  take(): TextSplit[] {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(this.folder, { withFileTypes: true });
    } catch (error) {
      throw new SpillwayError('SPW_ERR_SOURCE_IO', `the monitored folder ${this.folder} cannot be listed: ${(error as Error).message}`, { cause: error });
    }
    const fresh: { file: string; size: number; mtime: number }[] = [];
    for (const entry of entries) {
      if (!entry.isFile() || entry.name.startsWith('.') || this.seen.has(entry.name)) continue;
      const file = path.join(this.folder, entry.name);
      const stat = statOrNull(file);
      // Gone between the listing and the stat (renamed away): not seen, so looked at again next time.
      if (stat === null) continue;
      this.seen.add(entry.name);
      if (stat.size > 0) fresh.push({ file, size: stat.size, mtime: stat.mtimeMs });
    }
    fresh.sort((a, b) => a.mtime - b.mtime || (a.file < b.file ? -1 : 1));
    return fresh.map(({ file, size }) => ({ file, start: 0, end: size }));
  }
}

function statOrNull(file: string): fs.Stats | null {
  try {
    return fs.statSync(file);
  } catch {
    return null;
  }
}

/**
 * Where a benchmark run is recorded: bench/results/<timestamp>.json (every figure,
 * the machine and the commit) and the sweep chart beside it.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface MachineInfo {
  cores: number;
  cpuModel: string;
  node: string;
  platform: string;
  totalMemoryBytes: number;
  /** The commit checked out, with "-dirty" when the tree has changes (the figures may not be the commit's). */
  commit: string;
}

/** The package root, found from this file whether it runs compiled (dist/bench) or as source (bench). */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the package root');
    dir = parent;
  }
  return dir;
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cores: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    totalMemoryBytes: os.totalmem(),
    commit: gitCommit(),
  };
}

function gitCommit(): string {
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: packageRoot(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const commit = git('rev-parse', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') === '' ? commit : `${commit}-dirty`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/** A file-name-safe UTC timestamp, e.g. 2025-01-31T12-00-00Z. */
export function timestamp(date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');
}

/** bench/results/<stamp>.<extension>, the folder created if needed. */
export function resultPath(stamp: string, extension: 'json' | 'svg'): string {
  const dir = path.join(packageRoot(), 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${stamp}.${extension}`);
}

export function writeResults(stamp: string, results: unknown): string {
  const file = resultPath(stamp, 'json');
  fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  return file;
}

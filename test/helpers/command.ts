import { execFile } from 'node:child_process';
import path from 'node:path';

/** The `spillway` command of this checkout (it runs dist/: npm run build first). */
export const SPILLWAY_BIN = path.resolve('bin/spillway.js');

/** How a command ended. */
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `spillway ARGS`, to its end (killed after two minutes), whatever its exit code. */
export function spillway(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SPILLWAY_BIN, ...args], { timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

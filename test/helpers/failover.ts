import fs from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { expect } from 'vitest';
import { RestClient } from '../../src/rest/RestClient.js';
import { TaskManagerGateway } from '../../src/rpc/TaskManagerGateway.js';
import type { TaskView } from '../../src/jobmanager/store/JobStore.js';
import { eventually } from './eventually.js';
import type { JobStatus } from './jobs.js';

/** Writes `files` text files of `lines` lines of 10 space-separated words (vocabulary `vocabulary`), seeded; returns the exact counts. */
export function writeWords(dir: string, files: number, lines: number, vocabulary: number, seed: number): Map<string, number> {
  fs.mkdirSync(dir, { recursive: true });
  const counts = new Map<string, number>();
  let state = seed >>> 0 || 1;
  const next = (): number => {
    // xorshift32: the same words on every run.
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % vocabulary;
  };
  for (let f = 0; f < files; f++) {
    const out: string[] = [];
    for (let l = 0; l < lines; l++) {
      const words: string[] = [];
      for (let w = 0; w < 10; w++) words.push(`w${next()}`);
      for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
      out.push(words.join(' '));
    }
    fs.writeFileSync(path.join(dir, `part-${f}.txt`), out.join('\n') + '\n');
  }
  return counts;
}

/** The counts a text sink wrote into `dir`: its files must be exactly part-00000 .. part-(n-1). */
export function readTextOutput(dir: string, parts: number): [string, number][] {
  const names = fs.readdirSync(dir).sort();
  expect(names, 'the output folder holds only its part files').toEqual(Array.from({ length: parts }, (_, i) => `part-${String(i).padStart(5, '0')}`));
  return names.flatMap((name) =>
    fs
      .readFileSync(path.join(dir, name), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line): [string, number] => {
        const [word, count] = line.split('\t');
        return [word, Number(count)];
      }),
  );
}

export interface JobDetails extends JobStatus<TaskView> {
  restarts: number;
}

/** Polls a job until `ready` holds of it; throws after `timeoutMs`. */
export async function waitUntil(url: string, id: string, ready: (job: JobDetails) => boolean, what: string, timeoutMs = 30_000): Promise<JobDetails> {
  let job: JobDetails | undefined;
  return eventually(
    () => `job ${id}: ${what} (state ${job?.state})`,
    async () => {
      job = await new RestClient(url).job(id);
      return ready(job) && job;
    },
    { timeoutMs, everyMs: 20 },
  );
}

/** The process of the TaskManager registered as `id`, found by its HTTP port's status. */
export async function processOf(url: string, id: string, processes: ChildProcess[]): Promise<ChildProcess> {
  const taskmanagers = await new RestClient(url).taskManagers();
  const tm = taskmanagers.find((t) => t.id === id);
  if (!tm) throw new Error(`no taskmanager ${id}`);
  const { pid } = await new TaskManagerGateway(tm).status();
  const child = processes.find((p) => p.pid === pid);
  if (!child) throw new Error(`taskmanager ${id} (pid ${pid}) is not a child of this cluster`);
  return child;
}

/** SIGKILLs a child and waits until it is gone. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/**
 * examples/wordcount.ts (a user's job module, typed API) on the cluster against its own
 * code with no engine: the example's regex tokenizer counting into a Map in two child
 * processes over half the corpus each, their Maps merged here. Both are timed by wall
 * clock from the start to the merged counts in this process:
 * - the engine: POST /jobs of the uploaded module, the tasks' reading, tokenizing,
 *   map-side combining, shuffle and final combine, the collect to the JobManager, a poll
 *   every POLL_MS seeing FINISHED, and GET /jobs/:id/result into a Map;
 * - its own code: spawning the two processes (Node's start included), reading and
 *   counting, each Map sent back over IPC, and the merge.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { transpileJob } from '../src/cli/TypeScriptJob.js';
import type { BenchCluster } from './cluster.js';
import { packageRoot } from './results.js';

const REGEX_COUNT = fileURLToPath(new URL('./processes/regex-count.js', import.meta.url));
/** Shorter than the suite's 50 ms, so that the steps of polling hardly weigh on a job of about a second. */
const POLL_MS = 10;
const PARALLELISM = 2;

export interface ExampleRun {
  bytes: number;
  seconds: number;
  mbPerSec: number;
  distinctWords: number;
}

/** A run and the counts it gave, compared and then dropped (they do not go into the results file). */
export interface CountedRun {
  run: ExampleRun;
  counts: Map<string, number>;
}

/** Strips the example's types as `spillway submit` does and uploads it; answers the hash to submit it by. */
export async function uploadExample(cluster: BenchCluster): Promise<string> {
  const file = path.join(packageRoot(), 'examples', 'wordcount.ts');
  return cluster.upload(await transpileJob(file, fs.readFileSync(file, 'utf8')));
}

/** One run of the uploaded example over the folder `input` at parallelism 2. */
export async function runExample(cluster: BenchCluster, module: string, input: string, bytes: number): Promise<CountedRun> {
  const started = performance.now();
  const status = await cluster.run({ module, params: { input }, parallelism: PARALLELISM }, undefined, POLL_MS);
  const counts = new Map(await cluster.result<[string, number]>(status.id));
  return counted(bytes, started, counts);
}

/** The example's own code in two processes, the first half of `files` in one and the rest in the other. */
export async function runOwnCode(files: readonly string[], bytes: number): Promise<CountedRun> {
  const half = Math.ceil(files.length / 2);
  const started = performance.now();
  const [first, second] = await Promise.all([countIn(files.slice(0, half)), countIn(files.slice(half))]);
  for (const [word, n] of second) first.set(word, (first.get(word) ?? 0) + n);
  return counted(bytes, started, first);
}

function counted(bytes: number, started: number, counts: Map<string, number>): CountedRun {
  const seconds = (performance.now() - started) / 1000;
  return { run: { bytes, seconds, mbPerSec: bytes / seconds / 1e6, distinctWords: counts.size }, counts };
}

function countIn(files: readonly string[]): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    const child = fork(REGEX_COUNT, [...files], { serialization: 'advanced', stdio: 'inherit' });
    child.once('message', (counts: Map<string, number>) => resolve(counts));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`regex-count exited (${code}) before it sent its counts`)));
  });
}

/** The first difference between the engine's counts and the own code's, if any. */
export function differs(engine: ReadonlyMap<string, number>, own: ReadonlyMap<string, number>): string | undefined {
  if (engine.size !== own.size) return `${engine.size} distinct words, its own code ${own.size}`;
  for (const [word, n] of own) if (engine.get(word) !== n) return `"${word}": ${engine.get(word) ?? 'none'}, its own code ${n}`;
  return undefined;
}

/**
 * The machine's own scaling for word count: the engine's tokenizer (readChunks into one
 * reused buffer, a WordCounter, one string per distinct word at the end) run bare in one worker thread
 * over the whole corpus, then in two threads over half each, with no engine around it.
 * Two slots cannot beat two bare threads: this is the ceiling beside which the engine's
 * 2-slot figure is judged. Imported, it offers the measurement; as a worker it counts.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { readChunks, splitsFor } from '../src/job/TextSplits.js';
import { WordCounter } from '../src/job/WordCounter.js';

export interface ThreadScalingRun {
  threads: number;
  bytes: number;
  /** From starting the threads until the last one has read its counts out. */
  seconds: number;
  mbPerSec: number;
  /** Distinct words summed over the threads: equal runs give equal sums. */
  distinct: number;
}

interface WorkerInput {
  files: string[];
  subtask: number;
  threads: number;
}

/** Counts the corpus in `threads` bare worker threads, each its contiguous share as the engine splits it. */
export async function measureThreadScaling(files: readonly string[], bytes: number, threads: number): Promise<ThreadScalingRun> {
  const started = performance.now();
  const distinct = await Promise.all(Array.from({ length: threads }, (_, subtask) => countInThread({ files: [...files], subtask, threads })));
  const seconds = (performance.now() - started) / 1000;
  return { threads, bytes, seconds, mbPerSec: bytes / seconds / 1e6, distinct: distinct.reduce((a, b) => a + b, 0) };
}

function countInThread(input: WorkerInput): Promise<number> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: input });
    worker.once('message', (distinct: number) => {
      resolve(distinct);
      void worker.terminate();
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`bare word count thread exited (${code})`)));
  });
}

async function count({ files, subtask, threads }: WorkerInput): Promise<number> {
  const counter = new WordCounter();
  for (const split of splitsFor(files, subtask, threads)) await readChunks(split, (chunk) => counter.add(chunk), { reuse: true });
  // The engine makes a string per distinct word at the end, too.
  let distinct = 0;
  for (const _entry of counter.entries()) distinct++;
  return distinct;
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  void count(workerData as WorkerInput).then((distinct) => port.postMessage(distinct));
}

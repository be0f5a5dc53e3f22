/**
 * The machine's own scaling for word count: the engine's tokenizer (readChunks into one
 * reused buffer, a WordCounter, one string per distinct word at the end) run bare in one
 * worker thread over the whole corpus, then in two threads over half each, with no
 * engine around it. The threads are started once and kept, warm, across runs, as a
 * TaskManager keeps its task threads: a cold thread's start and JIT warm-up would be a
 * fixed cost of its own and pull the ratio down. Two slots cannot beat two bare threads:
 * this is the ceiling beside which the engine's 2-slot figure is judged. Imported, it
 * offers the measurement; as a worker it counts.
 */
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { readChunks, splitsFor } from '../src/connectors/text/TextSplits.js';
import { WordCounter } from '../src/job/builtins/wordcount/WordCounter.js';

export interface ThreadScalingRun {
  threads: number;
  bytes: number;
  /** From asking the threads until the last one has read its counts out. */
  seconds: number;
  mbPerSec: number;
  /** Distinct words summed over the threads: equal runs give equal sums. */
  distinct: number;
}

interface CountRequest {
  files: string[];
  subtask: number;
  threads: number;
}

/** Worker threads that count their share of a corpus on request, kept between runs. */
export class BareThreads {
  private readonly workers: Worker[];

  constructor(count: number) {
    this.workers = Array.from({ length: count }, () => new Worker(new URL(import.meta.url)));
  }

  /** Counts the corpus in the first `threads` threads, each its contiguous share as the engine splits it. */
  async measure(files: readonly string[], bytes: number, threads: number): Promise<ThreadScalingRun> {
    if (threads > this.workers.length) throw new RangeError(`${threads} threads asked of ${this.workers.length}`);
    const started = performance.now();
    const distinct = await Promise.all(this.workers.slice(0, threads).map((worker, subtask) => ask(worker, { files: [...files], subtask, threads })));
    const seconds = (performance.now() - started) / 1000;
    return { threads, bytes, seconds, mbPerSec: bytes / seconds / 1e6, distinct: distinct.reduce((a, b) => a + b, 0) };
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.terminate()));
  }
}

function ask(worker: Worker, request: CountRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const fail = (error: Error): void => {
      worker.off('message', done);
      reject(error);
    };
    const exited = (code: number): void => fail(new Error(`bare word count thread exited (${code})`));
    const done = (distinct: number): void => {
      worker.off('error', fail).off('exit', exited);
      resolve(distinct);
    };
    worker.once('message', done).once('error', fail).once('exit', exited);
    worker.postMessage(request);
  });
}

async function count({ files, subtask, threads }: CountRequest): Promise<number> {
  const counter = new WordCounter();
  for (const split of splitsFor(files, subtask, threads)) await readChunks(split, (chunk) => counter.add(chunk), { reuse: true });
  // The engine makes a string per distinct word at the end, too.
  let distinct = 0;
  for (const _entry of counter.entries()) distinct++;
  return distinct;
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  port.on('message', (request: CountRequest) => void count(request).then((distinct) => port.postMessage(distinct)));
}

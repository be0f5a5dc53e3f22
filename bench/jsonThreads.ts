/**
 * The machine's ceiling for the JSON Lines figure: the engine's own reader (readLines
 * over byte-range splits, JSON.parse a line, a Map of counts by one field) run bare in
 * worker threads, no engine around it: one thread over every file, then two over half
 * each. The threads are started once and kept warm across runs, as a TaskManager keeps
 * its task threads. Imported, it offers the measurement; as a worker it counts.
 */
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { readLines, splitsFor } from '../src/connectors/text/TextSplits.js';

interface CountRequest {
  files: string[];
  field: string;
  subtask: number;
  threads: number;
}

export interface JsonThreadsRun {
  threads: number;
  seconds: number;
  records: number;
}

/** Worker threads that parse and count their share of JSON Lines files on request. */
export class BareJsonThreads {
  private readonly workers: Worker[];

  constructor(count: number) {
    this.workers = Array.from({ length: count }, () => new Worker(new URL(import.meta.url)));
  }

  async measure(files: readonly string[], field: string, threads: number): Promise<JsonThreadsRun> {
    const started = performance.now();
    const records = await Promise.all(this.workers.slice(0, threads).map((worker, subtask) => ask(worker, { files: [...files], field, subtask, threads })));
    return { threads, seconds: (performance.now() - started) / 1000, records: records.reduce((a, b) => a + b, 0) };
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.terminate()));
  }
}

function ask(worker: Worker, request: CountRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const fail = (error: Error): void => reject(error);
    worker.once('message', (records: number) => {
      worker.off('error', fail);
      resolve(records);
    });
    worker.once('error', fail);
    worker.postMessage(request);
  });
}

async function count({ files, field, subtask, threads }: CountRequest): Promise<number> {
  const counts = new Map<unknown, number>();
  let records = 0;
  for (const split of splitsFor(files, subtask, threads)) {
    await readLines(split, (line) => {
      if (line.length === 0) return;
      const key = (JSON.parse(line) as Record<string, unknown>)[field];
      counts.set(key, (counts.get(key) ?? 0) + 1);
      records++;
    });
  }
  return records;
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  port.on('message', (request: CountRequest) => void count(request).then((records) => port.postMessage(records)));
}

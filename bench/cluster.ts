/**
 * Cluster-level figures: jobs run through a LocalCluster (a JobManager and 2
 * TaskManager processes with 2 slots each, real TCP between them) at parallelism 4,
 * timed by the JobManager (GET /jobs/:id durationMs), checked for exact results, with
 * every TaskManager's peak RSS (GET /status on each TaskManager).
 */
import path from 'node:path';
import { LocalCluster } from '../src/cli/LocalCluster.js';
import { processCpuSeconds } from '../src/cli/ProcessStats.js';
import { authorizationHeader, callJson } from '../src/rpc/HttpClient.js';
import type { CompressionCodec } from '../src/network/buffer/CompressionCodec.js';
import type { SyntheticSummary } from '../src/job/builtins/Synthetic.js';
import type { WordCountRecord } from '../src/job/builtins/wordcount/WordCount.js';
import type { TaskCounters } from '../src/rpc/TaskDeployment.js';
import { JobState } from '../src/lifecycle/JobState.js';
import { TaskState } from '../src/lifecycle/TaskState.js';

export const TASK_MANAGERS = 2;
export const SLOTS = 2;
export const PARALLELISM = TASK_MANAGERS * SLOTS;

/** The benchmark workload of the issue: 100 B records over a million keys. */
export const SYNTHETIC = { recordSize: 100, keys: 1_000_000 } as const;

export type Exchange = 'pipelined' | 'blocking' | 'sort-merge' | 'hybrid';

export interface SubmitBody {
  job?: string;
  module?: string;
  params: Record<string, unknown>;
  parallelism?: number;
  exchange?: Exchange;
  compression?: boolean | CompressionCodec;
  bufferTimeout?: number;
  /** The job's restart strategy (POST /jobs `restart`); the JobManager's default without it. */
  restart?: Record<string, unknown>;
  /** The job's checkpoints (POST /jobs `checkpoints`); none without. */
  checkpoints?: { interval: number; mode?: 'aligned' | 'unaligned'; alignmentTimeout?: number; timeout?: number; retain?: number; tolerableFailures?: number };
}

export interface JobStatus {
  id: string;
  state: JobState;
  error?: string;
  durationMs: number;
  started?: number;
  ended?: number;
  counters: TaskCounters;
  /** An unbounded job's sinks' latency (latency markers) and how long watermarks took to reach them. */
  latency?: { p50: number; p99: number; count: number };
  watermarkLatency?: { p50: number; p99: number; count: number };
  /** Times the job restarted after a failure. */
  restarts: number;
  /** `started` and `ended`: when the task's RUNNING and final reports reached the JobManager. */
  tasks: { id: string; stage: string; subtask: number; taskManager: string; attempt: number; state: TaskState; started?: number; ended?: number; counters: TaskCounters }[];
}

export interface TaskManagerMemory {
  id: string;
  /** Network memory, bytes. */
  memory: number;
  rss: number;
  peakRss: number;
}

interface TaskManagerEntry {
  id: string;
  host: string;
  httpPort: number;
  memory: number;
}

const JOB_TIMEOUT_MS = 10 * 60_000;

/** A LocalCluster with the REST calls the benchmarks need. */
export class BenchCluster {
  private constructor(
    private readonly local: LocalCluster,
    readonly url: string,
    private readonly taskManagers: number,
  ) {}

  static async start(options: ClusterOptions = {}): Promise<BenchCluster> {
    // Child logs would break up the table; BENCH_VERBOSE=1 shows them.
    const stdio = process.env.BENCH_VERBOSE ? 'inherit' : 'ignore';
    const local = new LocalCluster({ taskManagers: TASK_MANAGERS, slots: SLOTS, stdio, ...options });
    try {
      return new BenchCluster(local, await local.start(), options.taskManagers ?? TASK_MANAGERS);
    } catch (error) {
      await local.stop();
      throw error;
    }
  }

  stop(): Promise<void> {
    return this.local.stop();
  }

  /** Where each TaskManager keeps its partitions' files. */
  get partitionDirs(): string[] {
    return Array.from({ length: this.taskManagers }, (_, i) => path.join(this.local.taskManagerDir(i), 'partitions'));
  }

  /** Bytes every TaskManager's partitions wrote to disk so far, in all. */
  async bytesWrittenToDisk(): Promise<number> {
    const { taskmanagers } = await callJson<{ taskmanagers: TaskManagerEntry[] }>('GET', `${this.url}/taskmanagers`);
    const written = await Promise.all(
      taskmanagers.map(async (tm) => (await callJson<{ bytesWrittenToDisk: number }>('GET', `http://${tm.host}:${tm.httpPort}/status`)).bytesWrittenToDisk),
    );
    return written.reduce((sum, bytes) => sum + bytes, 0);
  }

  /** SIGKILLs the TaskManager registered as `id` (a machine lost); resolves once it is gone. */
  async killTaskManager(id: string): Promise<void> {
    const { taskmanagers } = await callJson<{ taskmanagers: TaskManagerEntry[] }>('GET', `${this.url}/taskmanagers`);
    const tm = taskmanagers.find((t) => t.id === id);
    if (!tm) throw new Error(`no taskmanager ${id}`);
    const { pid } = await callJson<{ pid: number }>('GET', `http://${tm.host}:${tm.httpPort}/status`);
    const child = this.local.processes.find((p) => p.pid === pid);
    if (!child) throw new Error(`taskmanager ${id} is not a process of this cluster`);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /** Every registered TaskManager's id and REST address. */
  async taskManagerUrls(): Promise<{ id: string; url: string }[]> {
    const { taskmanagers } = await callJson<{ taskmanagers: TaskManagerEntry[] }>('GET', `${this.url}/taskmanagers`);
    return taskmanagers.map((tm) => ({ id: tm.id, url: `http://${tm.host}:${tm.httpPort}` }));
  }

  /** Starts TaskManagers until `count` are registered. */
  async restoreTaskManagers(count: number): Promise<void> {
    const registered = async (): Promise<number> => (await callJson<{ taskmanagers: unknown[] }>('GET', `${this.url}/taskmanagers`)).taskmanagers.length;
    for (let n = await registered(); n < count; n++) this.local.addTaskManager();
    await this.local.waitForTaskManagers(count);
  }

  /**
   * Submits the job and polls it until it ends; `onPoll` sees every status. Throws
   * unless it FINISHED. `seconds` is the time a user sees: from the POST until a poll
   * sees FINISHED.
   */
  async run(body: SubmitBody, onPoll?: (status: JobStatus) => void, pollMs = 50): Promise<JobStatus & { seconds: number }> {
    const submitted = performance.now();
    const { id } = await callJson<{ id: string }>('POST', `${this.url}/jobs`, { parallelism: PARALLELISM, ...body });
    const deadline = Date.now() + JOB_TIMEOUT_MS;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      const status = await callJson<JobStatus>('GET', `${this.url}/jobs/${id}`);
      onPoll?.(status);
      if (status.state === JobState.FINISHED) return { ...status, seconds: (performance.now() - submitted) / 1000 };
      if (JobState.isTerminal(status.state)) throw new Error(`job ${id} (${describe(body)}) ${status.state}: ${status.error ?? 'no error given'}`);
      if (Date.now() > deadline) {
        await callJson('POST', `${this.url}/jobs/${id}/cancel`, {}).catch(() => undefined);
        throw new Error(`job ${id} (${describe(body)}) still ${status.state} after ${JOB_TIMEOUT_MS / 1000} s`);
      }
    }
  }

  async result<T>(id: string): Promise<T[]> {
    return (await callJson<{ records: T[] }>('GET', `${this.url}/jobs/${id}/result`)).records;
  }

  /** Uploads a job module; returns the hash to submit it by. */
  async upload(source: string): Promise<string> {
    return (await callJson<{ hash: string }>('POST', `${this.url}/modules`, source, { contentType: 'text/javascript' })).hash;
  }

  /** The process ids of the JobManager and every TaskManager. */
  pids(): number[] {
    return this.local.processes.flatMap((child) => (child.pid === undefined ? [] : [child.pid]));
  }

  /** CPU seconds every process of the cluster (JobManager and TaskManagers, kernel time included) has used so far. */
  cpuSeconds(): number {
    return this.pids().reduce((sum, pid) => sum + processCpuSeconds(pid), 0);
  }

  /** Submits a job and answers its id at once (an unbounded job runs until it is canceled). */
  async submit(body: SubmitBody): Promise<string> {
    return (await callJson<{ id: string }>('POST', `${this.url}/jobs`, { parallelism: PARALLELISM, ...body })).id;
  }

  async status(id: string): Promise<JobStatus> {
    return callJson<JobStatus>('GET', `${this.url}/jobs/${id}`);
  }

  async cancel(id: string): Promise<void> {
    await callJson('POST', `${this.url}/jobs/${id}/cancel`, {});
  }

  /** Every TaskManager's network memory, RSS and peak RSS (the peak since the process started). */
  async memory(): Promise<TaskManagerMemory[]> {
    const { taskmanagers } = await callJson<{ taskmanagers: TaskManagerEntry[] }>('GET', `${this.url}/taskmanagers`);
    return Promise.all(
      taskmanagers.map(async (tm) => {
        const status = await callJson<{ rss: number; peakRss: number }>('GET', `http://${tm.host}:${tm.httpPort}/status`);
        return { id: tm.id, memory: tm.memory, rss: status.rss, peakRss: status.peakRss };
      }),
    );
  }
}

/** A TaskManager's GET /metrics (Prometheus text), whose task counters are at most a task thread's report interval (500 ms) old. */
export async function taskManagerMetrics(url: string): Promise<string> {
  const response = await fetch(`${url}/metrics`, { headers: authorizationHeader(url) });
  if (!response.ok) throw new Error(`GET ${url}/metrics: ${response.status}`);
  return response.text();
}

function describe(body: SubmitBody): string {
  return `${body.job ?? 'module'} ${JSON.stringify(body.params)}`;
}

/** A bench cluster's shape; by default TASK_MANAGERS TaskManagers of SLOTS slots. */
export interface ClusterOptions {
  memory?: string;
  /** Managed memory of every TaskManager, e.g. `64mb`. */
  managedMemory?: string;
  bufferSize?: string;
  taskManagers?: number;
  slots?: number;
  /** Options for every process that takes them, e.g. `['--checkpoint-dir', DIR]`. */
  extraArgs?: string[];
}

/** Starts a cluster, hands it to `use`, and stops it whatever happens. */
export async function withCluster<T>(options: ClusterOptions, use: (cluster: BenchCluster) => Promise<T>): Promise<T> {
  const cluster = await BenchCluster.start(options);
  try {
    return await use(cluster);
  } finally {
    await cluster.stop();
  }
}

export interface SyntheticRun {
  records: number;
  exchange: Exchange;
  bufferTimeout?: number;
  seconds: number;
  recordsPerSec: number;
  /** Serialized bytes that crossed the exchange. */
  bytes: number;
  mbPerSec: number;
  /** Every record counted once and every key seen (from the collected per-task summaries). */
  exact: boolean;
}

/** One run of the built-in synthetic job. */
export async function runSynthetic(
  cluster: BenchCluster,
  records: number,
  exchange: Exchange,
  options: { bufferTimeout?: number; parallelism?: number } = {},
): Promise<{ run: SyntheticRun; status: JobStatus }> {
  const { bufferTimeout, parallelism = PARALLELISM } = options;
  const body: SubmitBody = { job: 'synthetic', params: { records, ...SYNTHETIC }, exchange, bufferTimeout, parallelism };
  const status = await cluster.run(body);
  const summaries = await cluster.result<SyntheticSummary>(status.id);
  const counted = summaries.reduce((sum, [n]) => sum + n, 0);
  const keys = summaries.reduce((sum, [, k]) => sum + k, 0);
  const seconds = status.durationMs / 1000;
  const bytes = status.counters.bytesOut;
  return {
    run: {
      records,
      exchange,
      bufferTimeout: options.bufferTimeout,
      seconds,
      recordsPerSec: records / seconds,
      bytes,
      mbPerSec: bytes / seconds / 1e6,
      exact: counted === records && keys === Math.min(records, SYNTHETIC.keys),
    },
    status,
  };
}

export interface WordCountRun {
  parallelism: number;
  bytes: number;
  seconds: number;
  mbPerSec: number;
  /** The JobManager's time for it, from its start to its end: no submission, no polling. */
  engineSeconds: number;
  distinctWords: number;
  exact: boolean;
  /** The first difference from the expected counts, if any. */
  mismatch?: string;
}

/**
 * One run of the built-in word count over `input`, timed as a user sees it (from the
 * POST until a poll every 50 ms sees FINISHED), its collected counts compared with `expected`.
 */
export async function runWordCount(
  cluster: BenchCluster,
  input: string,
  bytes: number,
  expected: ReadonlyMap<string, number>,
  parallelism: number,
  options: { exchange?: Exchange; onPoll?: (status: JobStatus) => void; restart?: Record<string, unknown> } = {},
): Promise<WordCountRun> {
  const status = await cluster.run({ job: 'wordcount', params: { input }, exchange: options.exchange ?? 'pipelined', parallelism, restart: options.restart }, options.onPoll);
  const counts = await cluster.result<WordCountRecord>(status.id);
  const mismatch = compareCounts(counts, expected);
  const seconds = status.seconds;
  const engineSeconds = ((status.ended ?? Number.NaN) - (status.started ?? Number.NaN)) / 1000;
  return { parallelism, bytes, seconds, mbPerSec: bytes / seconds / 1e6, engineSeconds, distinctWords: counts.length, exact: mismatch === undefined, mismatch };
}

function compareCounts(counts: readonly WordCountRecord[], expected: ReadonlyMap<string, number>): string | undefined {
  const seen = new Set<string>();
  for (const [word, count] of counts) {
    if (seen.has(word)) return `"${word}" appears twice in the result`;
    seen.add(word);
    const want = expected.get(word);
    if (want !== count) return `"${word}": ${count}, expected ${want ?? 'none'}`;
  }
  if (seen.size !== expected.size) return `${seen.size} distinct words, expected ${expected.size}`;
  return undefined;
}

export interface SpillRun extends SyntheticRun {
  /** Serialized bytes the producers wrote into their spillable partitions. */
  bytesWritten: number;
  /** Producer phase: from the first producer's start until every producer finished, its partitions on disk. */
  writeSeconds: number;
  writeMbPerSec: number;
  /** Consumer phase: from then until the last consumer ended, every spilled byte read back and shuffled. */
  readSeconds: number;
  readMbPerSec: number;
}

/** The synthetic job's producing stage (src/job/builtins/Synthetic.ts). */
const PRODUCER_STAGE = 'generate';

/**
 * A blocking synthetic run split into its two phases by its tasks' own start and end
 * (as GET /jobs/:id shows them): producers (generate, serialize, spill), from the first
 * producer's start to the last one's end, and consumers (read back, send, count), from
 * then to the last consumer's end. Each rate includes that phase's CPU work, so it is a
 * lower bound of the raw disk rates.
 *
 * Warm up with a run of the same size: on these machines the first few spilling runs
 * of a cluster are slower (in one test, 300, 410, 455 and then about 460 MB/s; after a
 * warm-up of a tenth of the size the first measured run was still 0.65x of the later ones).
 */
export async function runSpill(cluster: BenchCluster, records: number, exchange: Exchange = 'blocking'): Promise<SpillRun> {
  const { run, status } = await runSynthetic(cluster, records, exchange);
  const producers = status.tasks.filter((t) => t.stage === PRODUCER_STAGE);
  const consumers = status.tasks.filter((t) => t.stage !== PRODUCER_STAGE);
  const producersDone = latest(producers, 'ended');
  const bytesWritten = producers.reduce((sum, t) => sum + t.counters.bytesOut, 0);
  const writeSeconds = Math.max(0.001, (producersDone - earliest(producers, 'started')) / 1000);
  const readSeconds = Math.max(0.001, (latest(consumers, 'ended') - producersDone) / 1000);
  return {
    ...run,
    bytesWritten,
    writeSeconds,
    writeMbPerSec: bytesWritten / writeSeconds / 1e6,
    readSeconds,
    readMbPerSec: bytesWritten / readSeconds / 1e6,
  };
}

type TaskTimes = Pick<JobStatus['tasks'][number], 'started' | 'ended'>;

function earliest(tasks: TaskTimes[], time: keyof TaskTimes): number {
  return Math.min(...tasks.map((t) => t[time] ?? Number.NaN));
}

function latest(tasks: TaskTimes[], time: keyof TaskTimes): number {
  return Math.max(...tasks.map((t) => t[time] ?? Number.NaN));
}

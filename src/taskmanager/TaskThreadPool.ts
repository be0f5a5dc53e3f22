import { Worker } from 'node:worker_threads';
import { SpillwayError } from '../errors/Errors.js';
import { createHandoverRings, HandoverLink } from '../network/handover/HandoverLink.js';
import type { TaskThreadData } from './TaskThreadMessages.js';
import { log } from '../Logger.js';

/**
 * A task allocates records at a high rate, nearly all short-lived: a young generation
 * as large as the main thread's (two semi-spaces of 8 MiB) keeps scavenges rare. It is
 * resident in every thread, busy or idle, once grown: twice this (48, 32 MiB resident)
 * took a TaskManager running a 3-stage job on 2 slots, 6 threads, 100 MiB past the
 * memory bound of issue 13, for no measurable gain in throughput.
 */
const YOUNG_GENERATION_MB = 24;

/** A thread that has imported this many distinct job modules is not kept: their code stays in its heap. */
const MAX_MODULES_PER_THREAD = 16;

export interface TaskThreadPoolOptions extends Omit<TaskThreadData, 'rings'> {
  /** Idle threads kept for the next tasks. */
  keepIdle: number;
  /** A task thread's heap limit (V8's old generation), bytes; V8's default if absent. */
  taskHeapBytes?: number;
}

/** A task thread and the network thread's end of the handover with it. */
export interface TaskThread {
  worker: Worker;
  link: HandoverLink;
  /** What the thread ran last (job code and stage): its JIT-compiled code fits a task of the same again. */
  lastRan: string | null;
}

/**
 * The TaskManager's task threads: one per running task, and up to `keepIdle` idle
 * ones kept for reuse, since starting a thread costs tens of milliseconds.
 */
export class TaskThreadPool {
  private readonly idle: TaskThread[] = [];
  private readonly busy = new Set<TaskThread>();
  private closed = false;

  constructor(private readonly options: TaskThreadPoolOptions) {}

  get busyThreads(): number {
    return this.busy.size;
  }

  get idleThreads(): number {
    return this.idle.length;
  }

  /**
   * A thread for a task, preferring an idle one that last ran the same code (`kind`):
   * each thread compiles its own code, and a thread warm for a task runs it at once at
   * full speed.
   */
  acquire(kind: string): TaskThread {
    if (this.closed) throw new SpillwayError('SPW_ERR_TASK_CANCELED', 'the TaskManager is stopping');
    const warm = this.idle.findLastIndex((t) => t.lastRan === kind);
    const thread = warm >= 0 ? this.idle.splice(warm, 1)[0] : (this.idle.pop() ?? this.spawn());
    thread.lastRan = kind;
    this.busy.add(thread);
    return thread;
  }

  /** A thread whose task is over: kept for the next task if it is sound and room is left, else ended. */
  release(thread: TaskThread, modules: number): void {
    this.busy.delete(thread);
    if (!this.closed && modules <= MAX_MODULES_PER_THREAD && this.idle.length < this.options.keepIdle) this.idle.push(thread);
    else void thread.worker.terminate();
  }

  /** Stops a thread whatever it is doing; resolves once it has stopped and its memory is no longer touched. */
  async terminate(thread: TaskThread): Promise<void> {
    this.busy.delete(thread);
    await thread.worker.terminate();
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.idle.splice(0), ...this.busy];
    this.busy.clear();
    await Promise.all(all.map((thread) => thread.worker.terminate()));
  }

  private spawn(): TaskThread {
    const { shared, modulesDir, taskHeapBytes } = this.options;
    const rings = createHandoverRings();
    const data: TaskThreadData = { shared, modulesDir, rings };
    const worker = new Worker(new URL('./TaskThread.js', import.meta.url), {
      workerData: data,
      resourceLimits: {
        maxYoungGenerationSizeMb: YOUNG_GENERATION_MB,
        ...(taskHeapBytes === undefined ? {} : { maxOldGenerationSizeMb: Math.max(1, Math.floor(taskHeapBytes / (1 << 20))) }),
      },
    });
    const thread: TaskThread = { worker, link: HandoverLink.network(rings), lastRan: null };
    // An error of a thread that serves no task (a timer of the last task's code) must not be
    // an unhandled 'error' event, which would end the TaskManager: the thread dies, and is not reused.
    worker.on('error', (error) => {
      if (this.idle.includes(thread)) log.warn({ err: error }, 'an idle task thread failed and is dropped');
    });
    // A thread that dies while idle is simply not reused.
    worker.once('exit', () => {
      thread.link.close();
      const i = this.idle.indexOf(thread);
      if (i >= 0) this.idle.splice(i, 1);
      this.busy.delete(thread);
    });
    return thread;
  }
}

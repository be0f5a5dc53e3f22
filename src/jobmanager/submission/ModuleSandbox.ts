import { Worker } from 'node:worker_threads';
import { deserializeError, SpillwayError, type SerializedError } from '../../errors/Errors.js';
import type { ValidatedJob } from '../../job/ValidatedJob.js';
import type { JobReference } from '../../rpc/TaskDeployment.js';

/** A sandbox thread's heap limit: a module that builds a huge graph fails, the JobManager does not. */
const SANDBOX_HEAP_MB = 256;

/** A sandbox thread that has imported this many distinct modules is not kept: their code stays in its heap. */
const MAX_MODULES_PER_SANDBOX = 16;

/** What a function of the job becomes on its way out of the sandbox (functions cannot cross threads). */
export const FUNCTION_MARK = '__spillwayFunction';

/** The sandbox's answer: the validated job's shape, or why it could not be defined (SPW_ERR_INVALID_JOB, SPW_ERR_MODULE, ...), and the modules the thread has imported. */
export type SandboxAnswer = ({ shape: unknown } | { error: SerializedError }) & { modules: number };

export interface SandboxRequest {
  dir: string;
  ref: JobReference;
  parallelism: number;
}

/**
 * Loads uploaded job modules in a worker thread, with a time limit, and returns each
 * validated job's shape: stages, edges and sinks as the JobManager plans with them, every
 * function a stub (job code runs on TaskManagers only). A module whose top level or
 * definition never returns, throws or runs out of heap fails only its submission, and
 * its thread is ended. A thread that answered is kept for the next submission, as task
 * threads are: starting one and loading the engine's modules into it took 160-180 ms of
 * every submission of a module.
 */
export class ModuleSandbox {
  private idle: Worker | null = null;
  private closed = false;

  constructor(private readonly timeoutMs: number) {}

  /** The module's job, validated in the sandbox thread (so not again here: its stubs are not the module's values). */
  async load(request: SandboxRequest): Promise<ValidatedJob> {
    const kept = this.idle;
    this.idle = null;
    const outcome = await this.loadIn(kept ?? spawnSandbox(), request);
    // A kept thread can fail for an earlier module's timer while it loads this one: then this module gets a thread of its own.
    const answer = 'ended' in outcome && kept !== null ? await this.loadIn(spawnSandbox(), request) : outcome;
    if ('ended' in answer) throw answer.ended;
    if ('error' in answer) throw deserializeError(answer.error);
    return revive(answer.shape) as ValidatedJob;
  }

  /** Asks `worker` for the request's shape, then keeps the thread for the next submission or ends it. */
  private async loadIn(worker: Worker, request: SandboxRequest): Promise<SandboxAnswer | ThreadEnded> {
    worker.off('error', this.dropIdle).off('exit', this.dropIdle).ref();
    let answer: SandboxAnswer | ThreadEnded;
    try {
      answer = await ask(worker, request, this.timeoutMs);
    } catch (error) {
      void worker.terminate();
      throw error;
    }
    if ('ended' in answer) void worker.terminate();
    else this.keep(worker, answer.modules);
    return answer;
  }

  /** Ends the kept thread. */
  async close(): Promise<void> {
    this.closed = true;
    const idle = this.idle;
    this.idle = null;
    await idle?.terminate();
  }

  /** Keeps a thread that answered for the next submission, unless one is kept already, it holds too many modules, or the sandbox is closed. */
  private keep(worker: Worker, modules: number): void {
    if (this.closed || this.idle !== null || modules > MAX_MODULES_PER_SANDBOX) {
      void worker.terminate();
      return;
    }
    // An idle thread holds the JobManager's process open no longer than its other handles do.
    worker.unref();
    this.idle = worker;
    worker.once('error', this.dropIdle).once('exit', this.dropIdle);
  }

  /** A thread that fails or ends while idle (a timer of a module's code) is dropped, not reused. */
  private readonly dropIdle = (): void => {
    const worker = this.idle;
    this.idle = null;
    void worker?.terminate();
  };
}

function spawnSandbox(): Worker {
  const worker = new Worker(new URL('./ModuleSandboxThread.js', import.meta.url), {
    resourceLimits: { maxOldGenerationSizeMb: SANDBOX_HEAP_MB },
  });
  // An error while no request listens must not be an unhandled 'error' event, which would end the JobManager.
  worker.on('error', () => {});
  return worker;
}

/** A sandbox thread that failed or exited before it answered: SPW_ERR_MODULE. */
interface ThreadEnded {
  ended: SpillwayError;
}

/** One request to a sandbox thread: its answer, ThreadEnded when the thread fails or ends first, SPW_ERR_MODULE when it times out. */
function ask(worker: Worker, request: SandboxRequest, timeoutMs: number): Promise<SandboxAnswer | ThreadEnded> {
  const module = request.ref.module;
  return new Promise<SandboxAnswer | ThreadEnded>((resolve, reject) => {
    const settle = (): void => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    const fail = (error: SpillwayError): void => {
      settle();
      reject(error);
    };
    const onMessage = (answer: SandboxAnswer): void => {
      settle();
      resolve(answer);
    };
    const ended = (error: SpillwayError): void => {
      settle();
      resolve({ ended: error });
    };
    const onError = (error: Error): void => ended(new SpillwayError('SPW_ERR_MODULE', `module ${module} failed to load: ${error.message}`));
    const onExit = (code: number): void => ended(new SpillwayError('SPW_ERR_MODULE', `module ${module} ended its loader with exit code ${code}`));
    const timer = setTimeout(() => fail(new SpillwayError('SPW_ERR_MODULE', `module ${module} did not define its job within ${timeoutMs} ms (--module-load-timeout)`)), timeoutMs);
    worker.on('message', onMessage);
    worker.once('error', onError);
    worker.once('exit', onExit);
    worker.postMessage(request);
  });
}

/** The shape with every function mark turned back into a stub. */
function revive(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(revive);
  if (value === null || typeof value !== 'object') return value;
  if (FUNCTION_MARK in value) {
    return () => {
      throw new SpillwayError('SPW_ERR_INTERNAL', 'job code runs on TaskManagers, not in the JobManager');
    };
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revive(v)]));
}

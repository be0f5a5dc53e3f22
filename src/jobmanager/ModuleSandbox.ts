import { Worker } from 'node:worker_threads';
import { deserializeError, SpillwayError, type SerializedError } from '../errors/Errors.js';
import type { JobDefinition } from '../job/JobDefinition.js';
import type { JobReference } from '../rpc/TaskDeployment.js';

/** A sandbox thread's heap limit: a module that builds a huge graph fails, the JobManager does not. */
const SANDBOX_HEAP_MB = 256;

/** What a function of the job becomes on its way out of the sandbox (functions cannot cross threads). */
export const FUNCTION_MARK = '__spillwayFunction';

/** The sandbox's answer: the job's shape, or why it could not be defined (SPW_ERR_INVALID_JOB, SPW_ERR_MODULE, ...). */
export type SandboxAnswer = { shape: unknown } | { error: SerializedError };

export interface SandboxRequest {
  dir: string;
  ref: JobReference;
  parallelism: number;
}

/**
 * Loads an uploaded job module in a worker thread, with a time limit, and returns its
 * definition's shape: stages, edges and sinks as the JobManager plans with them, every
 * function a stub (job code runs on TaskManagers only). A module whose top level or
 * definition never returns, throws or runs out of heap fails only its submission.
 */
export async function loadInSandbox(request: SandboxRequest, timeoutMs: number): Promise<JobDefinition> {
  const worker = new Worker(new URL('./ModuleSandboxThread.js', import.meta.url), {
    workerData: request,
    resourceLimits: { maxOldGenerationSizeMb: SANDBOX_HEAP_MB },
  });
  let timer: NodeJS.Timeout | null = null;
  try {
    const answer = await new Promise<SandboxAnswer>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new SpillwayError('SPW_ERR_MODULE', `module ${request.ref.module} did not define its job within ${timeoutMs} ms (--module-load-timeout)`)),
        timeoutMs,
      );
      worker.once('message', resolve);
      worker.once('error', (error) => reject(new SpillwayError('SPW_ERR_MODULE', `module ${request.ref.module} failed to load: ${error.message}`)));
      worker.once('exit', (code) => reject(new SpillwayError('SPW_ERR_MODULE', `module ${request.ref.module} ended its loader with exit code ${code}`)));
    });
    if ('error' in answer) throw deserializeError(answer.error);
    return revive(answer.shape) as JobDefinition;
  } finally {
    if (timer) clearTimeout(timer);
    await worker.terminate();
  }
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

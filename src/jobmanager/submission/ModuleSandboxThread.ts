/**
 * The entry point of a module sandbox thread: for each request, loads a job module,
 * defines and validates its job (where the module's own values are), and answers with
 * the validated job's shape (functions marked, see ModuleSandbox). Modules stay imported for the next requests.
 */
import { parentPort } from 'node:worker_threads';
import { serializeError, SpillwayError } from '../../errors/Errors.js';
import { JobLoader } from '../../job/JobLoader.js';
import { validatedJob } from '../../job/ValidatedJob.js';
import { checkSources } from '../../connectors/Sources.js';
import { FUNCTION_MARK, type SandboxAnswer, type SandboxRequest } from './ModuleSandbox.js';

/** Imported modules by hash, per folder of modules (one JobManager's). */
const loaders = new Map<string, JobLoader>();

function shape(value: unknown, seen: Set<object>): unknown {
  if (typeof value === 'function') return { [FUNCTION_MARK]: true };
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) throw new SpillwayError('SPW_ERR_INVALID_JOB', 'the job definition refers to itself');
  seen.add(value);
  const copy = Array.isArray(value) ? value.map((v) => shape(v, seen)) : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v, seen)]));
  seen.delete(value);
  return copy;
}

async function define({ dir, ref, parallelism }: SandboxRequest): Promise<SandboxAnswer> {
  let loader = loaders.get(dir);
  if (loader === undefined) loaders.set(dir, (loader = new JobLoader(dir, null)));
  try {
    const job = validatedJob(await loader.load(ref), parallelism);
    checkSources(job.stages);
    return { shape: shape(job, new Set()), modules: loader.importedModules };
  } catch (error) {
    // What the module's own code threw (at its top level, or defining the job) has no code of ours.
    return { error: serializeError(error, 'SPW_ERR_MODULE'), modules: loader.importedModules };
  }
}

parentPort!.on('message', (request: SandboxRequest) => {
  void define(request).then((answer) => parentPort!.postMessage(answer));
});

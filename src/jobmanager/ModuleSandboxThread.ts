/**
 * The entry point of a module sandbox thread: loads one job module, defines and
 * validates its job, and answers with the job's shape (functions marked, see ModuleSandbox).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { serializeError, SpillwayError } from '../errors/Errors.js';
import { JobLoader } from '../job/JobLoader.js';
import { validateJob } from '../job/JobDefinition.js';
import { checkSources } from '../connectors/Sources.js';
import { FUNCTION_MARK, type SandboxAnswer, type SandboxRequest } from './ModuleSandbox.js';

const { dir, ref, parallelism } = workerData as SandboxRequest;

function shape(value: unknown, seen: Set<object>): unknown {
  if (typeof value === 'function') return { [FUNCTION_MARK]: true };
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) throw new SpillwayError('SPW_ERR_INVALID_JOB', 'the job definition refers to itself');
  seen.add(value);
  const copy = Array.isArray(value) ? value.map((v) => shape(v, seen)) : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v, seen)]));
  seen.delete(value);
  return copy;
}

async function define(): Promise<SandboxAnswer> {
  try {
    const definition = await new JobLoader(dir, null).load(ref);
    checkSources(validateJob(definition, parallelism));
    return { shape: shape(definition, new Set()) };
  } catch (error) {
    // What the module's own code threw (at its top level, or defining the job) has no code of ours.
    return { error: serializeError(error, 'SPW_ERR_MODULE') };
  }
}

parentPort!.postMessage(await define());

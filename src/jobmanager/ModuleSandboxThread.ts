/**
 * The entry point of a module sandbox thread: loads one job module, defines and
 * validates its job, and answers with the job's shape (functions marked, see ModuleSandbox).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { JobLoader } from '../job/JobLoader.js';
import { validateJob } from '../job/JobDefinition.js';
import { listInputFiles } from '../job/TextSplits.js';
import { FUNCTION_MARK, type SandboxAnswer, type SandboxRequest } from './ModuleSandbox.js';

const { dir, ref, parallelism } = workerData as SandboxRequest;

function shape(value: unknown, seen: Set<object>): unknown {
  if (typeof value === 'function') return { [FUNCTION_MARK]: true };
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) throw new Error('the job definition refers to itself');
  seen.add(value);
  const copy = Array.isArray(value) ? value.map((v) => shape(v, seen)) : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v, seen)]));
  seen.delete(value);
  return copy;
}

async function define(): Promise<SandboxAnswer> {
  try {
    const definition = await new JobLoader(dir, null).load(ref);
    validateJob(definition, parallelism);
    for (const stage of definition.stages) if (stage.source && 'text' in stage.source) listInputFiles(stage.source.text);
    return { shape: shape(definition, new Set()) };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

parentPort!.postMessage(await define());

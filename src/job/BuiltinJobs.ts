import type { JobDefinition } from './JobDefinition.js';
import { join } from './builtins/Join.js';
import { keyedCombine } from './builtins/KeyedCombine.js';
import { NEXMARK_JOBS } from './builtins/nexmark/NexmarkQueries.js';
import { sort } from './builtins/Sort.js';
import { synthetic } from './builtins/Synthetic.js';
import { wordCount } from './builtins/wordcount/WordCount.js';
import { SQL_JOB, sqlJob } from '../sql/SqlJob.js';

/** The jobs submitted by name, each a function of its JSON params. */
export const BUILTIN_JOBS: Readonly<Record<string, (params: Record<string, unknown>) => JobDefinition>> = {
  wordcount: wordCount,
  sort,
  join,
  synthetic,
  combine: keyedCombine,
  ...NEXMARK_JOBS,
  [SQL_JOB]: sqlJob,
};

export function isBuiltinJob(name: string): boolean {
  return Object.hasOwn(BUILTIN_JOBS, name);
}

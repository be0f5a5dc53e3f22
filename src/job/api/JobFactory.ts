import type { JobDefinition } from '../JobDefinition.js';

/** The params a job is submitted with: JSON values from POST /jobs, strings from `spillway submit --param k=v`. */
export type JobParams = Readonly<Record<string, unknown>>;

/** What a job module's default export may be: a function of the submitted params that returns the job. */
export type JobFactory = (params: JobParams) => JobDefinition;

import type { JobDefinition, StageDefinition } from './JobDefinition.js';
import { isBounded, validateJob } from './JobValidation.js';

/** Held only by a job that went through `validatedJob`: a type-level mark, nothing at run time. */
declare const VALIDATED: unique symbol;

/**
 * A job that passed validation at its parallelism (Flink's JobGraph): what the
 * JobManager checks a submission against and builds the execution graph from, once. Its
 * stages are in topological order, each operator, source and sink in the `kind` shape.
 * Made by `validatedJob` alone; the module sandbox sends one back from its thread, where
 * the module's own values were validated.
 */
export interface ValidatedJob {
  readonly name: string;
  readonly parallelism: number;
  readonly stages: readonly StageDefinition[];
  /** Whether every source ends; an unbounded job runs until it is canceled. */
  readonly bounded: boolean;
  readonly [VALIDATED]: true;
}

/** Validates `definition` at `parallelism` (validateJob: SPW_ERR_INVALID_JOB and the like when it breaks a rule). */
export function validatedJob(definition: JobDefinition, parallelism: number): ValidatedJob {
  const stages = validateJob(definition, parallelism);
  const job: Omit<ValidatedJob, typeof VALIDATED> = { name: definition.name, parallelism, stages, bounded: isBounded(stages) };
  return job as ValidatedJob;
}

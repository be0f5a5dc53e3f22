import { SpillwayError } from '../../errors/Errors.js';

/** A job's checkpoints, as `POST /jobs` gives them (`"checkpoints": {...}`) with their defaults filled in. */
export interface CheckpointOptions {
  /** Ms between checkpoints. */
  interval: number;
  mode: 'aligned' | 'unaligned';
  /** Ms an aligned checkpoint may wait for its barriers at a task before it goes unaligned there; never without. */
  alignmentTimeout?: number;
  /** Ms a checkpoint may take before it is aborted. */
  timeout: number;
  /** Completed checkpoints kept; older ones are deleted. */
  retain: number;
  /** Checkpoints in a row that may fail (time out, or not be written) before the job fails. */
  tolerableFailures: number;
  /** Where its checkpoints go, instead of the JobManager's --checkpoint-dir. */
  directory?: string;
}

export const DEFAULT_CHECKPOINT_TIMEOUT_MS = 60_000;
export const DEFAULT_RETAINED_CHECKPOINTS = 1;
export const DEFAULT_TOLERABLE_FAILURES = 0;

/** The JSON schema of `checkpoints` in POST /jobs. */
export const checkpointsSchema = {
  type: 'object',
  required: ['interval'],
  additionalProperties: false,
  properties: {
    interval: { type: 'integer', minimum: 10 },
    mode: { enum: ['aligned', 'unaligned'] },
    alignmentTimeout: { type: 'integer', minimum: 0 },
    timeout: { type: 'integer', minimum: 1 },
    retain: { type: 'integer', minimum: 1 },
    tolerableFailures: { type: 'integer', minimum: 0 },
    directory: { type: 'string', minLength: 1 },
  },
} as const;

/** A submission's checkpoint options with defaults, and the folder they go to; SPW_ERR_CHECKPOINT_CONFIG if there is none. */
export function checkpointOptions(asked: Partial<CheckpointOptions> & { interval: number }, defaultDirectory: string | undefined): CheckpointOptions & { directory: string } {
  const directory = asked.directory ?? defaultDirectory;
  if (directory === undefined) {
    throw new SpillwayError('SPW_ERR_CHECKPOINT_CONFIG', 'the job asks for checkpoints, and neither it (checkpoints.directory) nor the JobManager (--checkpoint-dir) says where they go');
  }
  return {
    interval: asked.interval,
    mode: asked.mode ?? 'aligned',
    alignmentTimeout: asked.alignmentTimeout,
    timeout: asked.timeout ?? DEFAULT_CHECKPOINT_TIMEOUT_MS,
    retain: asked.retain ?? DEFAULT_RETAINED_CHECKPOINTS,
    tolerableFailures: asked.tolerableFailures ?? DEFAULT_TOLERABLE_FAILURES,
    directory,
  };
}

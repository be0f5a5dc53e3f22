import { StateMachine } from './StateMachine.js';

/**
 * A job's state, as GET /jobs/:id shows it.
 *
 *   CREATED --> RUNNING --> FINISHED
 *      |           |
 *      |           +------> FAILED
 *      |           |
 *      +-----------+------> CANCELED
 *      |
 *      +------------------> FAILED   (no slots in time, or it cannot be planned)
 *
 * A job that restarts tasks stays RUNNING. FINISHED, FAILED and CANCELED are terminal.
 */
export enum JobState {
  /** Submitted, waiting for slots. */
  CREATED = 'CREATED',
  RUNNING = 'RUNNING',
  FINISHED = 'FINISHED',
  FAILED = 'FAILED',
  CANCELED = 'CANCELED',
}

const JOB_TRANSITIONS = new StateMachine<JobState>('job', {
  [JobState.CREATED]: [JobState.RUNNING, JobState.FAILED, JobState.CANCELED],
  [JobState.RUNNING]: [JobState.FINISHED, JobState.FAILED, JobState.CANCELED],
  [JobState.FINISHED]: [],
  [JobState.FAILED]: [],
  [JobState.CANCELED]: [],
});

// Functions on the enum, as Flink's ExecutionState.isTerminal(): callers ask the type.
// eslint-disable-next-line @typescript-eslint/no-namespace
export namespace JobState {
  /** Whether nothing follows: FINISHED, FAILED or CANCELED. */
  export function isTerminal(state: JobState): boolean {
    return JOB_TRANSITIONS.isTerminal(state);
  }

  /** `to`, if a job in `from` may go there; SPW_ERR_ILLEGAL_STATE_TRANSITION otherwise. */
  export function transition(from: JobState, to: JobState, jobId: string): JobState {
    return JOB_TRANSITIONS.check(from, to, jobId);
  }

  /** Every state, in the order of its life. */
  export const ALL: readonly JobState[] = [JobState.CREATED, JobState.RUNNING, JobState.FINISHED, JobState.FAILED, JobState.CANCELED];
}

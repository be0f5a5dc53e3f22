import { StateMachine } from './StateMachine.js';

/**
 * One attempt of one subtask, as the JobManager tracks it (Flink's ExecutionState).
 *
 *   CREATED --> DEPLOYING --> RUNNING --> FINISHED
 *      |            |            |
 *      |            +------------+------> FAILED
 *      |            |            |
 *      +------------+------------+------> CANCELED
 *
 * A restart does not move an attempt back: the subtask gets a new attempt, which
 * starts in CREATED (ExecutionVertex.newAttempt). FINISHED, FAILED and CANCELED are
 * terminal. A TaskManager reports RUNNING, then one of the three.
 */
export enum TaskState {
  /** Not deployed yet: waiting for its region's inputs, or for a restart. */
  CREATED = 'CREATED',
  /** Sent to its TaskManager. */
  DEPLOYING = 'DEPLOYING',
  RUNNING = 'RUNNING',
  FINISHED = 'FINISHED',
  FAILED = 'FAILED',
  CANCELED = 'CANCELED',
}

/** How a task attempt ended, as its TaskManager reports it. */
export type TaskEndState = TaskState.FINISHED | TaskState.FAILED | TaskState.CANCELED;

const TASK_TRANSITIONS = new StateMachine<TaskState>('task', {
  [TaskState.CREATED]: [TaskState.DEPLOYING, TaskState.CANCELED],
  // A deployment that fails before the task runs is FAILED; a fast task may finish before its RUNNING report is read.
  [TaskState.DEPLOYING]: [TaskState.RUNNING, TaskState.FINISHED, TaskState.FAILED, TaskState.CANCELED],
  [TaskState.RUNNING]: [TaskState.FINISHED, TaskState.FAILED, TaskState.CANCELED],
  [TaskState.FINISHED]: [],
  [TaskState.FAILED]: [],
  [TaskState.CANCELED]: [],
});

// eslint-disable-next-line @typescript-eslint/no-namespace
export namespace TaskState {
  /** Whether nothing follows: FINISHED, FAILED or CANCELED. */
  export function isTerminal(state: TaskState): boolean {
    return TASK_TRANSITIONS.isTerminal(state);
  }

  /** Whether an attempt in `from` may go to `to`. */
  export function allows(from: TaskState, to: TaskState): boolean {
    return TASK_TRANSITIONS.allows(from, to);
  }

  /** `to`, if an attempt in `from` may go there; SPW_ERR_ILLEGAL_STATE_TRANSITION otherwise. */
  export function transition(from: TaskState, to: TaskState, taskId: string): TaskState {
    return TASK_TRANSITIONS.check(from, to, taskId);
  }
}

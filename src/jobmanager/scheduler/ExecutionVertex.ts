import type { SerializedError } from '../../errors/Errors.js';
import { TaskState } from '../../lifecycle/TaskState.js';
import type { TaskBufferStats } from '../../network/networkThread/NetworkEnd.js';
import { emptyCounters, type TaskCounters } from '../../rpc/TaskDeployment.js';
import type { CounterSample, TaskRates } from '../jobs/TaskRates.js';

/**
 * One subtask of a stage, placed on a TaskManager, and its current attempt. Its state
 * moves only along TaskState's transitions (`transition`); a restart gives it a new
 * attempt, in CREATED (`newAttempt`).
 */
export class ExecutionVertex {
  /** Which run of this subtask, from 0; a restart deploys the next. */
  attempt = 0;
  state: TaskState = TaskState.CREATED;
  /** Why this attempt failed or was canceled. */
  error?: SerializedError;
  /** When this attempt's RUNNING and final reports reached the JobManager (epoch ms), as Flink's subtask start-time and end-time. */
  started?: number;
  ended?: number;
  counters: TaskCounters = emptyCounters();
  /** The last report of a running task, its rates since the one before, and where its buffers are now. */
  sample?: CounterSample;
  rates?: TaskRates;
  buffers?: TaskBufferStats;

  constructor(
    readonly taskId: string,
    readonly stage: string,
    readonly subtask: number,
    /** The stage's parallelism. */
    readonly parallelism: number,
    public taskManagerId: string,
  ) {}

  /** Whether this attempt has ended. */
  get isTerminal(): boolean {
    return TaskState.isTerminal(this.state);
  }

  /** Moves this attempt to `to`; throws SPW_ERR_ILLEGAL_STATE_TRANSITION if TaskState does not join the two. */
  transition(to: TaskState): void {
    this.state = TaskState.transition(this.state, to, `${this.taskId} attempt ${this.attempt}`);
  }

  /** A restart: the next attempt, in CREATED, with nothing of the last one but its counters. */
  newAttempt(): void {
    this.attempt++;
    this.state = TaskState.CREATED;
    this.error = undefined;
    this.started = undefined;
    this.ended = undefined;
  }
}

import { DEFAULT_MAX_PARALLELISM } from '../network/taskThread/writer/ChannelSelector.js';
import type { StatefulOperator } from './checkpoint/OperatorState.js';
import { KeyedState } from './state/KeyedState.js';
import { StateBudget } from './state/StateBudget.js';
import { Mailbox, ProcessingTimers, TaskTime } from './time/Mailbox.js';

/**
 * What the operators of one task share in time: the event time of the record pushed
 * now and the task's watermark, wall-clock timers that run in the task's loop, the
 * keyed state of each operator that keeps some, and the task's streaming counters.
 * Made once per task; `close()` drops its timers however the task ends.
 */
export class StreamContext {
  readonly time = new TaskTime();
  readonly mailbox = new Mailbox();
  readonly timers = new ProcessingTimers(this.mailbox);
  /** Records dropped as late by the task's operators. */
  lateRecordsDropped = 0;
  private readonly budgets: StateBudget[] = [];
  /** The task's operators that keep state in its checkpoints, by their owner (kind and place). */
  readonly stateful = new Map<string, StatefulOperator>();
  /** Tells the task's outputs that the stream went idle or active again; set by the task. */
  status: (idle: boolean) => void | Promise<void> = () => undefined;

  constructor(
    /** Whether the job's input ends: then no watermark flows, and event time ends with the input. */
    readonly bounded: boolean,
    readonly maxParallelism = DEFAULT_MAX_PARALLELISM,
  ) {}

  /** The budget of `owner`'s state, counted in the task's state size. */
  budget(owner: string, limit: number): StateBudget {
    const budget = new StateBudget(owner, limit);
    this.budgets.push(budget);
    return budget;
  }

  /** A keyed state of `owner`'s, counted in the task's state size. */
  keyedState(owner: string, limit: number): KeyedState {
    return new KeyedState(this.budget(owner, limit), this.maxParallelism);
  }

  /** Keeps `operator`'s state in the task's checkpoints, under `owner`. */
  checkpointed(owner: string, operator: StatefulOperator): void {
    this.stateful.set(owner, operator);
  }

  /** Estimated bytes of state the task holds. */
  get stateBytes(): number {
    return this.budgets.reduce((sum, budget) => sum + budget.bytes, 0);
  }

  close(): void {
    this.timers.close();
  }
}

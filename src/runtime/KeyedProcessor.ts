import { SpillwayError } from '../errors/Errors.js';
import type { KeyFn } from '../job/KeyFn.js';
import type { Chain } from './Chain.js';
import type { OperatorContext } from './operators/OperatorSpec.js';
import type { ProcessContext, TimerAccess, TimerContext } from './operators/ProcessFunction.js';
import type { OperatorSnapshot, StatefulOperator } from './checkpoint/OperatorState.js';
import type { KeyedState } from './state/KeyedState.js';
import { KeyedTimers } from './state/KeyedTimers.js';
import type { TaskTime } from './time/Mailbox.js';

/** What a keyed process calls with a record or a timer: the user's function, bound to its context. */
export type OnRecord = (record: unknown, ctx: ProcessContext, emit: (record: unknown) => void) => void;
export type OnTimer = ((time: number, ctx: TimerContext, emit: (record: unknown) => void) => void) | undefined;

/**
 * The runtime of a keyed process function, of one or two inputs (Flink's
 * KeyedProcessOperator and KeyedCoProcessOperator): it sets the record's key as the
 * current one of its keyed state and timers, calls the user's function with a context
 * that reads them, and fires event-time timers as the watermark passes them and
 * processing-time timers as the wall clock does (as the task's mail). In a bounded job
 * the watermark is +Infinity once the input ends: every event-time timer fires then,
 * in time order.
 */
export class KeyedProcessor implements ProcessContext, TimerAccess, StatefulOperator {
  private readonly keyed: KeyedState;
  private readonly eventTimers = new KeyedTimers();
  private readonly processingTimers = new KeyedTimers();
  private readonly time: TaskTime;
  /** Records the function emitted while the next step waits, and what they wait for. */
  private held: unknown[] = [];
  private blocked: Promise<void> | null = null;
  private readonly collect = (record: unknown): void => {
    if (this.blocked !== null) {
      this.held.push(record);
      return;
    }
    const waiting = this.next.push(record);
    if (waiting) this.blocked = waiting;
  };
  private wakeAt = Number.POSITIVE_INFINITY;
  timeDomain: 'event' | 'processing' = 'event';
  private timerTime = Number.NaN;
  private firing = false;

  constructor(
    private readonly keys: readonly KeyFn[],
    private readonly onRecord: readonly OnRecord[],
    private readonly onTimer: OnTimer,
    private readonly next: Chain,
    private readonly context: OperatorContext,
  ) {
    this.keyed = context.stream.keyedState(context.owner, context.memory.operatorBudget);
    this.time = context.stream.time;
    context.stream.checkpointed(context.owner, this);
  }

  /** Its keyed state and timers: [keyGroup, 'state', key, slots] and [keyGroup, 'event' | 'processing', key, time]. */
  snapshot(): OperatorSnapshot {
    const keyed: unknown[][] = [];
    for (const [group, key, slots] of this.keyed.snapshot()) keyed.push([group, 'state', key, slots]);
    for (const [domain, timers] of [['event', this.eventTimers], ['processing', this.processingTimers]] as const) {
      for (const { key, time } of timers.all()) keyed.push([this.keyed.keyGroupOf(key), domain, key, time]);
    }
    return { keyed };
  }

  restore(snapshots: readonly OperatorSnapshot[], owns: (keyGroup: number) => boolean): void {
    for (const snapshot of snapshots) {
      for (const [group, what, key, value] of snapshot.keyed ?? []) {
        if (!owns(group as number)) continue;
        if (what === 'state') this.keyed.restore(key, value as Parameters<KeyedState['restore']>[1]);
        else {
          this.keyed.setCurrentKey(key);
          if (what === 'event') this.registerEventTime(value as number);
          else this.registerProcessingTime(value as number);
        }
      }
    }
  }

  get key(): unknown {
    return this.keyed.key;
  }

  get state(): KeyedState {
    return this.keyed;
  }

  get timestamp(): number {
    return this.firing ? this.timerTime : this.time.timestamp;
  }

  get currentWatermark(): number {
    return this.time.watermark;
  }

  get currentProcessingTime(): number {
    return Date.now();
  }

  get timers(): TimerAccess {
    return this;
  }

  registerEventTime(time: number): void {
    checkTime(time);
    if (this.eventTimers.register(this.keyed.key, time)) this.countTimer();
  }

  deleteEventTime(time: number): void {
    this.eventTimers.delete(this.keyed.key, time);
  }

  registerProcessingTime(time: number): void {
    checkTime(time);
    if (!this.processingTimers.register(this.keyed.key, time)) return;
    this.countTimer();
    if (time < this.wakeAt) {
      this.wakeAt = time;
      this.context.stream.timers.at(time, () => this.fireProcessingTimers());
    }
  }

  deleteProcessingTime(time: number): void {
    this.processingTimers.delete(this.keyed.key, time);
  }

  /** A record of input `input`. */
  push(input: number, record: unknown): void | Promise<void> {
    this.keyed.setCurrentKey(this.keys[input](record));
    this.onRecord[input](record, this, this.collect);
    return this.release();
  }

  /** Fires the event-time timers the watermark passed, then passes it on. */
  watermark(watermark: number, origin: number): void | Promise<void> {
    const fired = this.fireEventTimers(watermark);
    if (fired) return fired.then(() => this.next.watermark(watermark, origin));
    return this.next.watermark(watermark, origin);
  }

  /** The input ended: event time is over, so every event-time timer fires. */
  async end(): Promise<void> {
    this.time.watermark = Number.POSITIVE_INFINITY;
    await this.fireEventTimers(Number.POSITIVE_INFINITY);
    await this.next.end();
  }

  private fireEventTimers(until: number): void | Promise<void> {
    for (let timer = this.eventTimers.poll(until); timer !== null; timer = this.eventTimers.poll(until)) {
      this.countTimer(-1);
      const waiting = this.fire(timer.time, timer.key, 'event');
      if (waiting) return waiting.then(() => this.fireEventTimers(until));
    }
  }

  private fireProcessingTimers(): void | Promise<void> {
    this.wakeAt = Number.POSITIVE_INFINITY;
    const now = Date.now();
    for (let timer = this.processingTimers.poll(now); timer !== null; timer = this.processingTimers.poll(now)) {
      this.countTimer(-1);
      const waiting = this.fire(timer.time, timer.key, 'processing');
      if (waiting) return waiting.then(() => this.fireProcessingTimers());
    }
    const next = this.processingTimers.next;
    if (next !== Number.POSITIVE_INFINITY) {
      this.wakeAt = next;
      this.context.stream.timers.at(next, () => this.fireProcessingTimers());
    }
  }

  private fire(time: number, key: unknown, domain: 'event' | 'processing'): void | Promise<void> {
    if (this.onTimer === undefined) return;
    this.keyed.setCurrentKey(key);
    this.firing = true;
    this.timerTime = time;
    this.timeDomain = domain;
    // A timer's records carry its time as their event timestamp (Flink's onTimer output).
    if (domain === 'event') this.time.timestamp = time;
    try {
      this.onTimer(time, this, this.collect);
    } finally {
      this.firing = false;
    }
    return this.release();
  }

  /** After the user's function: what it emitted while the next step waited goes on, in order, once it may. */
  private release(): void | Promise<void> {
    if (this.blocked !== null) return this.drain();
  }

  private async drain(): Promise<void> {
    while (this.blocked !== null) {
      await this.blocked;
      this.blocked = null;
      const held = this.held;
      this.held = [];
      for (const record of held) this.collect(record);
    }
  }

  /** Each timer counts against the operator's state budget, about as much as a small entry. */
  private countTimer(sign = 1): void {
    this.keyed.count(sign * TIMER_BYTES);
  }
}

/** What a timer is counted as in the state's size. */
const TIMER_BYTES = 48;

function checkTime(time: number): void {
  if (typeof time !== 'number' || Number.isNaN(time)) throw new SpillwayError('SPW_ERR_USER_CODE', `a timer's time must be a number of ms, not ${JSON.stringify(time)}`);
}

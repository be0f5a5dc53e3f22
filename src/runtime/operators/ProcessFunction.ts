import type { KeyedStateAccess } from '../state/KeyedState.js';

/** A keyed operator's timers, of the current key (Flink's TimerService). */
export interface TimerAccess {
  /** Calls onTimer(time) once the watermark passes `time` (event time, ms); one timer per key and time. */
  registerEventTime(time: number): void;
  deleteEventTime(time: number): void;
  /** Calls onTimer(time) once the wall clock reaches `time` (epoch ms). */
  registerProcessingTime(time: number): void;
  deleteProcessingTime(time: number): void;
}

/** What a keyed process function is given with each record or timer. */
export interface ProcessContext<K = unknown> {
  /** The key of the record, or of the timer. */
  readonly key: K;
  /** The record's event timestamp, or the timer's time; NaN for a record without event time. */
  readonly timestamp: number;
  /** The task's input watermark now: -Infinity before the first, +Infinity once a bounded input has ended. */
  readonly currentWatermark: number;
  /** The wall clock, epoch ms. */
  readonly currentProcessingTime: number;
  /** State of the current key: `value(name)`, `list(name)`, `map(name)`. */
  readonly state: KeyedStateAccess;
  readonly timers: TimerAccess;
}

/** The context of onTimer: which clock fired. */
export interface TimerContext<K = unknown> extends ProcessContext<K> {
  readonly timeDomain: 'event' | 'processing';
}

/**
 * A function over a keyed stream with state and timers (Flink's KeyedProcessFunction):
 * processElement is called for each record, with its key's state; onTimer when one of
 * the key's timers fires. Both emit any number of records.
 */
export interface ProcessFunction<T = unknown, R = unknown, K = unknown> {
  processElement(record: T, ctx: ProcessContext<K>, emit: (record: R) => void): void;
  onTimer?(time: number, ctx: TimerContext<K>, emit: (record: R) => void): void;
}

/** Two keyed streams with the same key type, processed together with one state per key (Flink's KeyedCoProcessFunction). */
export interface CoProcessFunction<A = unknown, B = unknown, R = unknown, K = unknown> {
  processElement1(record: A, ctx: ProcessContext<K>, emit: (record: R) => void): void;
  processElement2(record: B, ctx: ProcessContext<K>, emit: (record: R) => void): void;
  onTimer?(time: number, ctx: TimerContext<K>, emit: (record: R) => void): void;
}

/**
 * An incremental aggregation of a window's records (Flink's AggregateFunction): one
 * accumulator per key and window, never a list of its records.
 */
export interface WindowAggregate<T = unknown, A = unknown, R = unknown> {
  create(): A;
  add(accumulator: A, record: T): A;
  /** Two accumulators of merged windows (sessions). */
  merge(a: A, b: A): A;
  result(accumulator: A): R;
}

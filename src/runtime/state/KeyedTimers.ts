import { stateKey, type StateKey } from './KeyedState.js';
import { MinHeap } from './MinHeap.js';

interface Timer {
  time: number;
  key: unknown;
  stateKey: StateKey;
}

/**
 * The timers of one keyed operator in one time domain (Flink's InternalTimerService):
 * at most one timer per key and time; `due(until)` takes those at or before `until`,
 * in time order. A min-heap, with a per-key set of times so that a deleted or repeated
 * timer is known in O(1) (deleted ones are skipped when they come up).
 */
export class KeyedTimers {
  private readonly heap = new MinHeap<Timer>((timer) => timer.time);
  private readonly byKey = new Map<StateKey, Set<number>>();

  /** Number of timers set. */
  get size(): number {
    let n = 0;
    for (const times of this.byKey.values()) n += times.size;
    return n;
  }

  /** The earliest timer's time, or Infinity. */
  get next(): number {
    this.dropDeleted();
    return this.heap.peek()?.time ?? Number.POSITIVE_INFINITY;
  }

  /** Sets a timer for `key` at `time`; true if it was not set already. */
  register(key: unknown, time: number): boolean {
    const sk = stateKey(key);
    let times = this.byKey.get(sk);
    if (times === undefined) {
      times = new Set();
      this.byKey.set(sk, times);
    }
    if (times.has(time)) return false;
    times.add(time);
    this.heap.push({ time, key, stateKey: sk });
    return true;
  }

  delete(key: unknown, time: number): void {
    const sk = stateKey(key);
    const times = this.byKey.get(sk);
    if (times === undefined) return;
    times.delete(time);
    if (times.size === 0) this.byKey.delete(sk);
  }

  /** Takes the next timer at or before `until`, or null; it is no longer set. */
  poll(until: number): { time: number; key: unknown } | null {
    this.dropDeleted();
    const top = this.heap.peek();
    if (top === undefined || top.time > until) return null;
    this.heap.pop();
    this.delete(top.key, top.time);
    return top;
  }

  /** Every timer set, for a snapshot. */
  *all(): Generator<{ time: number; key: unknown }> {
    for (const timer of this.heap.values()) if (this.byKey.get(timer.stateKey)?.has(timer.time)) yield timer;
  }

  private dropDeleted(): void {
    for (let top = this.heap.peek(); top !== undefined && !this.byKey.get(top.stateKey)?.has(top.time); top = this.heap.peek()) this.heap.pop();
  }
}

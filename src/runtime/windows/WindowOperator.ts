import { SpillwayError } from '../../errors/Errors.js';
import type { KeyFn } from '../../job/JobDefinition.js';
import { emitAll, type Chain } from '../Chain.js';
import { keyGroupOf } from '../../network/taskThread/writer/ChannelSelector.js';
import type { OperatorSnapshot, StatefulOperator } from '../checkpoint/OperatorState.js';
import type { OperatorContext } from '../operators/OperatorSpec.js';
import { estimateBytes, stateKey, type StateKey } from '../state/KeyedState.js';
import { KeyedTimers } from '../state/KeyedTimers.js';
import { MinHeap } from '../state/MinHeap.js';
import type { StateBudget } from '../state/StateBudget.js';
import type { TaskTime } from '../time/Mailbox.js';
import { alignedShape, intersects, windowStart, type WindowAssigner } from './WindowAssigner.js';

/** What a window keeps of its records, and what it gives out when it fires. */
export interface WindowContents<A> {
  create(): A;
  /** Adds a record of input `input`. */
  add(accumulator: A, record: unknown, input: number): A;
  /** Two windows' contents, when sessions merge. */
  merge(a: A, b: A): A;
  /** The window's records out: an aggregate's one result, a join's pairs. */
  fire(key: unknown, start: number, end: number, accumulator: A, emit: (record: unknown) => void): void;
  /** Bytes a record adds past the contents' first estimate: an aggregate's accumulator does not grow, a join's lists do. */
  addedBytes(record: unknown): number;
}

/** Bytes counted for each key's cell in a window, beside its key and contents. */
const CELL_BYTES = 64;

interface Cell<A> {
  key: unknown;
  acc: A;
}

/**
 * Event-time windows of a keyed stream (Flink's WindowOperator with an event-time
 * trigger), folded as records come: one accumulator per key and window. A window fires
 * when the watermark passes its last millisecond (end - 1), its results carrying that
 * as their timestamp; with `allowedLateness` it is kept that much longer, and a late
 * record updates it and fires it again; a record later than that is dropped and
 * counted. The end of a bounded input fires every window, so a bounded job's windows
 * are exact whatever the order its records came in.
 */
export class WindowOperator<A> implements StatefulOperator {
  private readonly time: TaskTime;
  private readonly budget: StateBudget;
  private readonly store: WindowStore<A>;

  constructor(
    assigner: WindowAssigner,
    private readonly contents: WindowContents<A>,
    private readonly keys: readonly KeyFn[],
    lateness: number,
    private readonly next: Chain,
    private readonly context: OperatorContext,
  ) {
    this.time = context.stream.time;
    this.budget = context.stream.budget(context.owner, context.memory.operatorBudget);
    this.store = assigner.type === 'session' ? new SessionStore(assigner.gap, lateness, contents, this.budget) : new AlignedStore(assigner, lateness, contents, this.budget);
    context.stream.checkpointed(context.owner, this);
  }

  /** Every key's windows and their contents, each entry with its key's group. */
  snapshot(): OperatorSnapshot {
    const group = (key: unknown): number => keyGroupOf(key, this.context.stream.maxParallelism);
    return { keyed: this.store.snapshot(group) };
  }

  restore(snapshots: readonly OperatorSnapshot[], owns: (keyGroup: number) => boolean): void {
    for (const snapshot of snapshots) for (const entry of snapshot.keyed ?? []) if (owns(entry[0] as number)) this.store.restore(entry);
  }

  push(input: number, record: unknown): void | Promise<void> {
    const t = this.time.timestamp;
    if (Number.isNaN(t)) throw new SpillwayError('SPW_ERR_USER_CODE', `${this.context.owner}: a record has no event timestamp; give the stream one with assignTimestamps before its window`);
    const key = this.keys[input](record);
    const late = this.store.add(key, t, record, input, this.time.watermark);
    if (late === null) {
      this.context.stream.lateRecordsDropped++;
      return;
    }
    return this.emitFired(late);
  }

  watermark(watermark: number, origin: number): void | Promise<void> {
    const fired = this.emitFired(this.store.due(watermark));
    if (fired) return fired.then(() => this.next.watermark(watermark, origin));
    return this.next.watermark(watermark, origin);
  }

  /** The input ended, and with it event time: every window fires. */
  async end(): Promise<void> {
    this.time.watermark = Number.POSITIVE_INFINITY;
    await this.emitFired(this.store.due(Number.POSITIVE_INFINITY));
    await this.next.end();
  }

  /** Emits what fired, window by window, each window's records timestamped with its last millisecond. */
  private emitFired(fired: Fired<A>[], from = 0): void | Promise<void> {
    for (let i = from; i < fired.length; i++) {
      const { start, end, cells } = fired[i];
      const out: unknown[] = [];
      const emit = (record: unknown): void => void out.push(record);
      for (const cell of cells) this.contents.fire(cell.key, start, end, cell.acc, emit);
      this.time.timestamp = end - 1;
      const waiting = emitAll(out, this.next.push);
      if (waiting) return waiting.then(() => this.emitFired(fired, i + 1));
    }
  }
}

/** A window that fired: its span and the cells (keys) it fires for. */
interface Fired<A> {
  start: number;
  end: number;
  cells: Cell<A>[];
}

interface WindowStore<A> {
  /** Its windows as snapshot entries: [keyGroup, key, ...]. */
  snapshot(group: (key: unknown) => number): unknown[][];
  /** Takes back one entry of a snapshot. */
  restore(entry: unknown[]): void;
  /**
   * Adds a record at event time `t`; returns what a late record made fire again (often
   * nothing), or null when the record is too late for every window it falls in.
   */
  add(key: unknown, t: number, record: unknown, input: number, watermark: number): Fired<A>[] | null;
  /** Takes what the watermark makes fire, in order of end; forgets what is past its lateness. */
  due(watermark: number): Fired<A>[];
}

/**
 * Tumbling and sliding windows: aligned alike for every key, so a window is one entry
 * with a cell per key, and firing takes whole windows in order of their start.
 */
class AlignedStore<A> implements WindowStore<A> {
  private readonly size: number;
  private readonly slide: number;
  private readonly offset: number;
  private readonly windows = new Map<number, { cells: Map<StateKey, Cell<A>>; bytes: number }>();
  /** Starts of windows not fired yet. */
  private readonly pending = new MinHeap<number>((start) => start);
  /** Starts of windows fired and kept for late records. */
  private readonly kept = new MinHeap<number>((start) => start);

  constructor(
    assigner: WindowAssigner,
    private readonly lateness: number,
    private readonly contents: WindowContents<A>,
    private readonly budget: StateBudget,
  ) {
    ({ size: this.size, slide: this.slide, offset: this.offset } = alignedShape(assigner));
  }

  add(key: unknown, t: number, record: unknown, input: number, watermark: number): Fired<A>[] | null {
    const sk = stateKey(key);
    let added = false;
    let fired: Fired<A>[] | undefined;
    for (let start = windowStart(t, this.slide, this.offset); start > t - this.size; start -= this.slide) {
      const end = start + this.size;
      if (end - 1 + this.lateness <= watermark) continue;
      added = true;
      let window = this.windows.get(start);
      if (window === undefined) {
        window = { cells: new Map(), bytes: 0 };
        this.windows.set(start, window);
        (end - 1 <= watermark ? this.kept : this.pending).push(start);
      }
      let cell = window.cells.get(sk);
      let bytes: number;
      if (cell === undefined) {
        cell = { key, acc: this.contents.add(this.contents.create(), record, input) };
        window.cells.set(sk, cell);
        bytes = CELL_BYTES + estimateBytes(key) + estimateBytes(cell.acc);
      } else {
        cell.acc = this.contents.add(cell.acc, record, input);
        bytes = this.contents.addedBytes(record);
      }
      window.bytes += bytes;
      this.budget.count(bytes);
      // Fired already, kept for lateness: fires again with this record in it.
      if (end - 1 <= watermark) (fired ??= []).push({ start, end, cells: [cell] });
    }
    return added ? (fired ?? NONE) : null;
  }

  /** [keyGroup, key, start, accumulator, fired (1) or not (0)] per key and window. */
  snapshot(group: (key: unknown) => number): unknown[][] {
    const fired = new Set(this.kept.values());
    const entries: unknown[][] = [];
    for (const [start, window] of this.windows) for (const cell of window.cells.values()) entries.push([group(cell.key), cell.key, start, cell.acc, fired.has(start) ? 1 : 0]);
    return entries;
  }

  restore([, key, start, acc, fired]: unknown[]): void {
    const s = start as number;
    let window = this.windows.get(s);
    if (window === undefined) {
      window = { cells: new Map(), bytes: 0 };
      this.windows.set(s, window);
      (fired === 1 ? this.kept : this.pending).push(s);
    }
    const bytes = CELL_BYTES + estimateBytes(key) + estimateBytes(acc);
    window.cells.set(stateKey(key), { key, acc: acc as A });
    window.bytes += bytes;
    this.budget.count(bytes);
  }

  due(watermark: number): Fired<A>[] {
    const fired: Fired<A>[] = [];
    for (let start = this.pending.peek(); start !== undefined && start + this.size - 1 <= watermark; start = this.pending.peek()) {
      this.pending.pop();
      const window = this.windows.get(start)!;
      fired.push({ start, end: start + this.size, cells: [...window.cells.values()] });
      this.kept.push(start);
    }
    for (let start = this.kept.peek(); start !== undefined && start + this.size - 1 + this.lateness <= watermark; start = this.kept.peek()) {
      this.kept.pop();
      this.budget.count(-this.windows.get(start)!.bytes);
      this.windows.delete(start);
    }
    return fired;
  }
}

interface Session<A> {
  start: number;
  end: number;
  acc: A;
  bytes: number;
}

/**
 * Session windows: per key, the sessions not fired yet, each [first record, last + gap);
 * a record's window [t, t + gap) merges with every session it touches or overlaps (Flink's
 * merging windows). A timer per session at its last millisecond fires it.
 */
class SessionStore<A> implements WindowStore<A> {
  private readonly sessions = new Map<StateKey, { key: unknown; list: Session<A>[] }>();
  private readonly timers = new KeyedTimers();

  constructor(
    private readonly gap: number,
    private readonly lateness: number,
    private readonly contents: WindowContents<A>,
    private readonly budget: StateBudget,
  ) {}

  add(key: unknown, t: number, record: unknown, input: number, watermark: number): Fired<A>[] | null {
    let start = t;
    let end = t + this.gap;
    if (end - 1 + this.lateness <= watermark) return null;
    const sk = stateKey(key);
    let entry = this.sessions.get(sk);
    if (entry === undefined) {
      entry = { key, list: [] };
      this.sessions.set(sk, entry);
    }
    let acc: A | undefined;
    let bytes = 0;
    const rest: Session<A>[] = [];
    for (const session of entry.list) {
      if (!intersects(start, end, session.start, session.end)) {
        rest.push(session);
        continue;
      }
      start = Math.min(start, session.start);
      end = Math.max(end, session.end);
      acc = acc === undefined ? session.acc : this.contents.merge(acc, session.acc);
      bytes += session.bytes;
      this.timers.delete(key, session.end - 1);
    }
    const grown = acc !== undefined;
    acc = this.contents.add(acc ?? this.contents.create(), record, input);
    const added = grown ? this.contents.addedBytes(record) : CELL_BYTES + estimateBytes(key) + estimateBytes(acc);
    this.budget.count(added);
    const merged: Session<A> = { start, end, acc, bytes: bytes + added };
    rest.push(merged);
    entry.list = rest;
    this.timers.register(key, end - 1 + (end - 1 <= watermark ? this.lateness : 0));
    return end - 1 <= watermark ? [{ start, end, cells: [{ key, acc }] }] : NONE;
  }

  /** [keyGroup, key, start, end, accumulator, the time its timer is set for] per key and session. */
  snapshot(group: (key: unknown) => number): unknown[][] {
    const entries: unknown[][] = [];
    const timers = new Map<StateKey, number[]>();
    for (const { key, time } of this.timers.all()) timers.set(stateKey(key), [...(timers.get(stateKey(key)) ?? []), time]);
    for (const [sk, { key, list }] of this.sessions) {
      const times = timers.get(sk) ?? [];
      for (const s of list) entries.push([group(key), key, s.start, s.end, s.acc, times.find((t) => t === s.end - 1 || t === s.end - 1 + this.lateness) ?? s.end - 1]);
    }
    return entries;
  }

  restore([, key, start, end, acc, timer]: unknown[]): void {
    const sk = stateKey(key);
    let entry = this.sessions.get(sk);
    if (entry === undefined) {
      entry = { key, list: [] };
      this.sessions.set(sk, entry);
    }
    const bytes = CELL_BYTES + estimateBytes(key) + estimateBytes(acc);
    entry.list.push({ start: start as number, end: end as number, acc: acc as A, bytes });
    this.budget.count(bytes);
    this.timers.register(key, timer as number);
  }

  due(watermark: number): Fired<A>[] {
    const fired: Fired<A>[] = [];
    for (let timer = this.timers.poll(watermark); timer !== null; timer = this.timers.poll(watermark)) {
      const sk = stateKey(timer.key);
      const entry = this.sessions.get(sk);
      if (entry === undefined) continue;
      const list: Session<A>[] = [];
      for (const session of entry.list) {
        const last = session.end - 1;
        if (last === timer.time) {
          fired.push({ start: session.start, end: session.end, cells: [{ key: entry.key, acc: session.acc }] });
          // Kept for late records until its lateness is past too.
          if (this.lateness > 0) {
            list.push(session);
            this.timers.register(timer.key, last + this.lateness);
            continue;
          }
          this.budget.count(-session.bytes);
        } else if (last + this.lateness === timer.time && last < timer.time) {
          this.budget.count(-session.bytes);
        } else list.push(session);
      }
      if (list.length === 0) this.sessions.delete(sk);
      else entry.list = list;
    }
    return fired;
  }
}

const NONE: Fired<never>[] = [];

import { SpillwayError } from '../../errors/Errors.js';
import { DEFAULT_MAX_PARALLELISM, keyGroupOf } from '../../network/taskThread/writer/ChannelSelector.js';
import { StateBudget } from './StateBudget.js';

/** A key as a Map key: primitives as they are, a composite key (array, object) by its JSON. */
export type StateKey = string | number | boolean | bigint | null | undefined;

export function stateKey(key: unknown): StateKey {
  return typeof key === 'object' && key !== null ? JSON.stringify(key) : (key as StateKey);
}

/** One value per key (Flink's ValueState), of the key the operator is processing now. */
export interface ValueState<T> {
  /** The key's value, or undefined if it has none. */
  get(): T | undefined;
  set(value: T): void;
  clear(): void;
}

/** A list per key (Flink's ListState). */
export interface ListState<T> {
  /** The key's list (empty if none); the array is the state's own: change it only through add and update. */
  get(): readonly T[];
  add(value: T): void;
  update(values: T[]): void;
  clear(): void;
}

/** A map per key (Flink's MapState). */
export interface MapState<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): void;
  has(key: K): boolean;
  delete(key: K): void;
  entries(): IterableIterator<[K, V]>;
  keys(): IterableIterator<K>;
  values(): IterableIterator<V>;
  readonly size: number;
  clear(): void;
}

/** What a keyed operator's state is made of, for a user: handles by name, of the current key. */
export interface KeyedStateAccess {
  value<T>(name: string): ValueState<T>;
  list<T>(name: string): ListState<T>;
  map<K, V>(name: string): MapState<K, V>;
}

/** A key's state: the key itself, one slot per state name, and the bytes counted for each slot. */
interface KeyEntry {
  key: unknown;
  slots: unknown[];
  sizes: number[];
}

export type StateKind = 'value' | 'list' | 'map';

/** Bytes of overhead counted for a key's entry and each of its states, beside their values. */
const ENTRY_BYTES = 64;

/**
 * The keyed state of one operator in one task (Flink's heap keyed state backend): per
 * key, values, lists and maps by name, always of the key being processed now
 * (`setCurrentKey`). Held in the task's heap; what it holds is estimated as it changes
 * and counted against the operator's share of managed memory, past which the task
 * fails with SPW_ERR_STATE_TOO_LARGE. Kept per key and grouped by key group when it is
 * snapshotted, so that a later parallelism can take whole key groups.
 */
export class KeyedState implements KeyedStateAccess {
  private readonly entries = new Map<StateKey, KeyEntry>();
  private readonly slots = new Map<string, { index: number; kind: StateKind; handle: unknown }>();
  private current: KeyEntry | undefined;
  private currentKey: unknown;
  private currentStateKey: StateKey;

  constructor(
    /** What it holds, counted against its operator's share of managed memory. */
    readonly budget: StateBudget,
    readonly maxParallelism = DEFAULT_MAX_PARALLELISM,
  ) {}

  /** Estimated bytes held. */
  get bytes(): number {
    return this.budget.bytes;
  }

  /** Makes `key` the one every handle reads and writes until the next call. */
  setCurrentKey(key: unknown): void {
    this.currentKey = key;
    this.currentStateKey = stateKey(key);
    this.current = this.entries.get(this.currentStateKey);
  }

  get key(): unknown {
    return this.currentKey;
  }

  /** Number of keys that hold state. */
  get size(): number {
    return this.entries.size;
  }

  value<T>(name: string): ValueState<T> {
    return this.slot(name, 'value', (i) => new ValueHandle<T>(this, i)) as ValueState<T>;
  }

  list<T>(name: string): ListState<T> {
    return this.slot(name, 'list', (i) => new ListHandle<T>(this, i)) as ListState<T>;
  }

  map<K, V>(name: string): MapState<K, V> {
    return this.slot(name, 'map', (i) => new MapHandle<K, V>(this, i)) as MapState<K, V>;
  }

  /** @internal The current key's slot `i`. */
  read(i: number): unknown {
    return this.current?.slots[i];
  }

  /** @internal Sets the current key's slot `i` to `value`, which costs `bytes`; undefined clears it. */
  write(i: number, value: unknown, bytes: number): void {
    let entry = this.current;
    if (entry === undefined) {
      if (value === undefined) return;
      entry = { key: this.currentKey, slots: [], sizes: [] };
      this.entries.set(this.currentStateKey, entry);
      this.current = entry;
      this.count(ENTRY_BYTES + estimateBytes(this.currentKey));
    }
    entry.slots[i] = value;
    this.count(bytes - (entry.sizes[i] ?? 0));
    entry.sizes[i] = value === undefined ? 0 : bytes;
    if (value === undefined && entry.slots.every((slot) => slot === undefined)) {
      this.entries.delete(this.currentStateKey);
      this.current = undefined;
      this.count(-(ENTRY_BYTES + estimateBytes(this.currentKey)));
    }
  }

  /** @internal The current key's slot `i` grew (or shrank) in place by `delta` bytes. */
  grow(i: number, delta: number): void {
    this.current!.sizes[i] += delta;
    this.count(delta);
  }

  /** @internal Counts bytes held; fails the task past the budget. */
  count(delta: number): void {
    this.budget.count(delta);
  }

  /** Every key's state, for a snapshot: [keyGroup, key, { name: [kind, value] }] (a map as its entries). Copies nothing it can share: a snapshot is packed at once. */
  *snapshot(): Generator<[number, unknown, Record<string, [StateKind, unknown]>]> {
    const names = [...this.slots.entries()];
    for (const entry of this.entries.values()) {
      const slots: Record<string, [StateKind, unknown]> = {};
      for (const [name, { index, kind }] of names) {
        const value = entry.slots[index];
        if (value !== undefined) slots[name] = [kind, value instanceof Map ? [...value] : value];
      }
      yield [keyGroupOf(entry.key, this.maxParallelism), entry.key, slots];
    }
  }

  /** Restores one key's state from a snapshot's entry. */
  restore(key: unknown, slots: Record<string, [StateKind, unknown]>): void {
    this.setCurrentKey(key);
    for (const [name, [kind, value]] of Object.entries(slots)) {
      const { index } = this.slots.get(name) ?? this.slotOf(name, kind);
      this.write(index, kind === 'map' ? new Map(value as [unknown, unknown][]) : value, estimateBytes(value));
    }
  }

  /** The key group of a key, as this state's snapshots give it. */
  keyGroupOf(key: unknown): number {
    return keyGroupOf(key, this.maxParallelism);
  }

  private slotOf(name: string, kind: StateKind): { index: number; kind: StateKind; handle: unknown } {
    if (kind === 'value') this.value(name);
    else if (kind === 'list') this.list(name);
    else this.map(name);
    return this.slots.get(name)!;
  }

  private slot(name: string, kind: StateKind, make: (index: number) => unknown): unknown {
    const known = this.slots.get(name);
    if (known !== undefined) {
      if (known.kind !== kind) throw new SpillwayError('SPW_ERR_USER_CODE', `state "${name}" of ${this.budget.owner} is a ${known.kind} state, not a ${kind} state`);
      return known.handle;
    }
    const index = this.slots.size;
    const handle = make(index);
    this.slots.set(name, { index, kind, handle });
    return handle;
  }
}

class ValueHandle<T> implements ValueState<T> {
  constructor(
    private readonly state: KeyedState,
    private readonly index: number,
  ) {}

  get(): T | undefined {
    return this.state.read(this.index) as T | undefined;
  }

  set(value: T): void {
    this.state.write(this.index, value, estimateBytes(value));
  }

  clear(): void {
    this.state.write(this.index, undefined, 0);
  }
}

const EMPTY: readonly never[] = [];
/** Bytes counted for a list or map itself, beside its members (and per member, beside the value). */
const COLLECTION_BYTES = 32;
const MEMBER_BYTES = 8;

class ListHandle<T> implements ListState<T> {
  constructor(
    private readonly state: KeyedState,
    private readonly index: number,
  ) {}

  get(): readonly T[] {
    return (this.state.read(this.index) as T[] | undefined) ?? EMPTY;
  }

  add(value: T): void {
    const list = this.state.read(this.index) as T[] | undefined;
    const bytes = MEMBER_BYTES + estimateBytes(value);
    if (list === undefined) this.state.write(this.index, [value], COLLECTION_BYTES + bytes);
    else {
      list.push(value);
      this.state.grow(this.index, bytes);
    }
  }

  update(values: T[]): void {
    if (values.length === 0) {
      this.state.write(this.index, undefined, 0);
      return;
    }
    let bytes = COLLECTION_BYTES;
    for (const value of values) bytes += MEMBER_BYTES + estimateBytes(value);
    this.state.write(this.index, [...values], bytes);
  }

  clear(): void {
    this.state.write(this.index, undefined, 0);
  }
}

class MapHandle<K, V> implements MapState<K, V> {
  constructor(
    private readonly state: KeyedState,
    private readonly index: number,
  ) {}

  private get inner(): Map<K, V> | undefined {
    return this.state.read(this.index) as Map<K, V> | undefined;
  }

  get(key: K): V | undefined {
    return this.inner?.get(key);
  }

  set(key: K, value: V): void {
    const map = this.inner;
    if (map === undefined) {
      this.state.write(this.index, new Map([[key, value]]), COLLECTION_BYTES + MEMBER_BYTES + estimateBytes(key) + estimateBytes(value));
      return;
    }
    const old = map.get(key);
    const had = old !== undefined || map.has(key);
    map.set(key, value);
    this.state.grow(this.index, had ? estimateBytes(value) - estimateBytes(old) : MEMBER_BYTES + estimateBytes(key) + estimateBytes(value));
  }

  has(key: K): boolean {
    return this.inner?.has(key) ?? false;
  }

  delete(key: K): void {
    const map = this.inner;
    if (map === undefined || !map.has(key)) return;
    if (map.size === 1) {
      this.state.write(this.index, undefined, 0);
      return;
    }
    const old = map.get(key);
    map.delete(key);
    this.state.grow(this.index, -(MEMBER_BYTES + estimateBytes(key) + estimateBytes(old)));
  }

  entries(): IterableIterator<[K, V]> {
    return (this.inner ?? new Map<K, V>()).entries();
  }

  keys(): IterableIterator<K> {
    return (this.inner ?? new Map<K, V>()).keys();
  }

  values(): IterableIterator<V> {
    return (this.inner ?? new Map<K, V>()).values();
  }

  get size(): number {
    return this.inner?.size ?? 0;
  }

  clear(): void {
    this.state.write(this.index, undefined, 0);
  }
}

/**
 * About what a value costs in the heap, bytes: cheap and bounded (it looks at most a few
 * levels and a few hundred members deep, and extrapolates), since it runs per update.
 */
export function estimateBytes(value: unknown, depth = 0): number {
  switch (typeof value) {
    case 'number':
      return 8;
    case 'string':
      return 16 + 2 * value.length;
    case 'boolean':
    case 'undefined':
      return 4;
    case 'bigint':
      return 16;
    case 'object': {
      if (value === null) return 4;
      if (depth > 3) return 64;
      if (ArrayBuffer.isView(value)) return 32 + value.byteLength;
      if (value instanceof Map) return 32 + sampled([...value.entries()].slice(0, 64), value.size, (e) => estimateBytes(e[0], depth + 1) + estimateBytes(e[1], depth + 1));
      if (Array.isArray(value)) return 16 + sampled(value.slice(0, 64), value.length, (v) => 8 + estimateBytes(v, depth + 1));
      const keys = Object.keys(value);
      return 32 + sampled(keys.slice(0, 64), keys.length, (k) => 8 + estimateBytes((value as Record<string, unknown>)[k], depth + 1));
    }
    default:
      return 16;
  }
}

/** The cost of `all` members from a sample of them. */
function sampled<T>(sample: readonly T[], all: number, cost: (member: T) => number): number {
  let sum = 0;
  for (const member of sample) sum += cost(member);
  return sample.length === 0 ? 0 : Math.round((sum * all) / sample.length);
}

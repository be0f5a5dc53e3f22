import { seededRandom } from '../../src/job/Corpus.js';

export type Random = () => number;

/** Numbers at the edges of what msgpackr encodes differently (fixints, 8/16/32-bit ints, float64). -0 is not here: see serialization.test.ts. */
export const EDGE_NUMBERS: readonly number[] = [
  0, 1, -1, 31, 32, 127, 128, -32, -33, 255, 256, 65535, 65536, -32768, -32769, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), -(2 ** 31) - 1,
  2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 53 + 2, Number.MAX_VALUE, -Number.MAX_VALUE,
  Number.MIN_VALUE, -Number.MIN_VALUE, Number.EPSILON, 1e-300, 1e300, 0.1, -2.5, NaN, Infinity, -Infinity,
];

/** 64-bit integers: msgpackr packs them as int64/uint64 and unpacks them as bigint. */
export const EDGE_BIGINTS: readonly bigint[] = [0n, -1n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 64n - 1n, 12345678901234567890n];

const FRAGMENTS = ['a', 'Z', '7', ' ', 'é', 'ß', 'Ω', 'ж', '中', '文', '😀', '👍🏽', 'e\u0301', '\u0000', '\n', '"', '\\', '\uffff'];
const KEY_NAMES = ['id', 'name', 'value', 'tags', 'x', 'y', 'nested', 'when', 'ok', 'data', 'ünï', '中'];

/** Random text and bytes to cut records from, generated once per seed of the soup. */
export class Soup {
  private readonly text: string;
  private readonly bytes: Uint8Array;

  constructor(chars: number, bytes: number, seed = 0x5eed) {
    const random = seededRandom(seed);
    const parts: string[] = [];
    let length = 0;
    while (length < chars) {
      const fragment = FRAGMENTS[Math.floor(random() * FRAGMENTS.length)];
      parts.push(fragment);
      length += fragment.length;
    }
    this.text = parts.join('');
    this.bytes = new Uint8Array(bytes);
    for (let i = 0; i < bytes; i++) this.bytes[i] = Math.floor(random() * 256);
  }

  /** About `length` UTF-16 units of mixed-script text, never with a broken surrogate pair at either end. */
  string(random: Random, length: number): string {
    const start = Math.floor(random() * (this.text.length - length));
    let from = start;
    let to = start + length;
    if (isLowSurrogate(this.text.charCodeAt(from))) from++;
    if (to > from && isHighSurrogate(this.text.charCodeAt(to - 1))) to--;
    return this.text.slice(from, to);
  }

  /** A copy of `length` random bytes, as a Buffer or a plain Uint8Array. */
  binary(random: Random, length: number): Uint8Array {
    const start = Math.floor(random() * (this.bytes.length - length));
    const copy = this.bytes.slice(start, start + length);
    return random() < 0.5 ? Buffer.from(copy.buffer, copy.byteOffset, copy.length) : copy;
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)];
}

function int(random: Random, below: number): number {
  return Math.floor(random() * below);
}

/**
 * Random records of every kind the wire must carry: scalars at their limits, text
 * and binary from 0 bytes to `maxBytes`, objects of one repeating shape (msgpackr's
 * sequential structures), objects whose shape keeps changing, and nesting.
 */
export class RecordGenerator {
  constructor(
    private readonly random: Random,
    private readonly soup: Soup,
    private readonly maxBytes: number,
  ) {}

  next(): unknown {
    const r = this.random();
    if (r < 0.25) return this.scalar();
    if (r < 0.45) return this.sameShape();
    if (r < 0.6) return this.changingShape(2);
    if (r < 0.7) return [this.scalar(), this.sameShape(), this.text(64)];
    return this.sized();
  }

  /** A record of a random size up to maxBytes, mostly small, sometimes several buffers long. */
  private sized(): unknown {
    const r = this.random();
    const bytes = r < 0.6 ? int(this.random, 256) : r < 0.9 ? int(this.random, this.maxBytes / 4) : int(this.random, this.maxBytes);
    const kind = int(this.random, 3);
    if (kind === 0) return this.soup.string(this.random, Math.floor(bytes / 2));
    if (kind === 1) return this.soup.binary(this.random, bytes);
    return { id: int(this.random, 1e6), blob: this.soup.binary(this.random, bytes), note: this.text(32) };
  }

  private scalar(): unknown {
    const r = this.random();
    if (r < 0.4) return pick(this.random, EDGE_NUMBERS);
    if (r < 0.5) return pick(this.random, EDGE_BIGINTS);
    if (r < 0.6) return null;
    if (r < 0.7) return this.random() < 0.5;
    if (r < 0.75) return undefined;
    if (r < 0.85) return (this.random() - 0.5) * 10 ** int(this.random, 40);
    return this.text(40);
  }

  private text(maxLength: number): string {
    return this.soup.string(this.random, int(this.random, maxLength + 1));
  }

  /** The same keys in the same order every time, as a record type would have. */
  private sameShape(): unknown {
    return {
      id: int(this.random, 2 ** 31),
      name: this.text(20),
      score: this.random() * 1000,
      tags: [this.text(8), this.text(8)],
      ok: this.random() < 0.5,
      where: { x: int(this.random, 1000), y: int(this.random, 1000) - 500 },
    };
  }

  /** A random subset of keys in a random order: thousands of shapes, more than msgpackr keeps structure ids for. */
  private changingShape(depth: number): unknown {
    const record: Record<string, unknown> = {};
    const keys = int(this.random, KEY_NAMES.length + 1);
    for (let i = 0; i < keys; i++) {
      const key = pick(this.random, KEY_NAMES);
      record[key] = depth > 0 && this.random() < 0.3 ? this.changingShape(depth - 1) : this.scalar();
    }
    return record;
  }
}

/** Where two values first differ (binary compared by bytes, numbers with Object.is), or null if they are the same. */
export function firstDifference(expected: unknown, actual: unknown, at = 'record'): string | null {
  if (expected instanceof Uint8Array) {
    if (!(actual instanceof Uint8Array)) return `${at}: expected binary, got ${describe(actual)}`;
    return Buffer.compare(expected, actual) === 0 ? null : `${at}: binary of ${expected.length} bytes differs (got ${actual.length} bytes)`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${at}: expected an array, got ${describe(actual)}`;
    if (actual.length !== expected.length) return `${at}: expected ${expected.length} elements, got ${actual.length}`;
    for (let i = 0; i < expected.length; i++) {
      const difference = firstDifference(expected[i], actual[i], `${at}[${i}]`);
      if (difference) return difference;
    }
    return null;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return `${at}: expected an object, got ${describe(actual)}`;
    const keys = Object.keys(expected);
    const actualKeys = Object.keys(actual);
    if (keys.join('\u0000') !== actualKeys.join('\u0000')) return `${at}: keys [${keys}] came back as [${actualKeys}]`;
    const e = expected as Record<string, unknown>;
    const a = actual as Record<string, unknown>;
    for (const key of keys) {
      const difference = firstDifference(e[key], a[key], `${at}.${key}`);
      if (difference) return difference;
    }
    return null;
  }
  return Object.is(expected, actual) ? null : `${at}: expected ${describe(expected)}, got ${describe(actual)}`;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return value.length > 40 ? `a string of ${value.length} units` : JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (Object.is(value, -0)) return '-0';
  if (value instanceof Uint8Array) return `binary of ${value.length} bytes`;
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? `an array of ${value.length}` : 'an object';
  return String(value);
}

/** Compares two record sequences element by element; the first difference, or null. */
export function firstSequenceDifference(expected: readonly unknown[], actual: readonly unknown[], what: string): string | null {
  const n = Math.min(expected.length, actual.length);
  for (let i = 0; i < n; i++) {
    const difference = firstDifference(expected[i], actual[i], `${what} record ${i}`);
    if (difference) return difference;
  }
  return expected.length === actual.length ? null : `${what}: expected ${expected.length} records, got ${actual.length}`;
}

/** Keys of shaped records: integer-like ones (which objects order first), non-ASCII, empty. */
const SHAPE_KEYS = ['key', 'payload', 'id', '0', '7', '10', 'ünï', '中文', '', 'a b', 'constructor', 'x'];

type ShapedType = 'ascii' | 'text' | 'int' | 'float' | 'bool' | 'null';
const SHAPED_TYPES: readonly ShapedType[] = ['ascii', 'text', 'int', 'float', 'bool', 'null'];

interface StreamShape {
  array: boolean;
  keys: string[];
  types: ShapedType[];
}

/**
 * Runs of records of one shape, the kind a shaped batch carries (plain objects of the
 * same keys, or arrays of one length, of strings, numbers, booleans and null), whose
 * shape changes now and then: a field added or dropped, a type changed (string to
 * number, int to float), a nested object or an undefined that no shaped batch takes,
 * a record of another kind between them.
 */
export class ShapedStream {
  private shape: StreamShape;

  constructor(
    private readonly random: Random,
    private readonly soup: Soup,
    /** Chance per record that the shape changes. */
    private readonly change = 0.01,
  ) {
    this.shape = this.newShape();
  }

  next(): unknown {
    const r = this.random();
    if (r < this.change) this.mutate();
    else if (r < this.change * 1.1) return { nested: { a: 1 }, n: int(this.random, 10) };
    else if (r < this.change * 1.2) return { ...(this.record() as object), missing: undefined };
    return this.record();
  }

  private record(): unknown {
    const { array, keys, types } = this.shape;
    const values = types.map((type) => this.value(type));
    return array ? values : Object.fromEntries(keys.map((key, i) => [key, values[i]]));
  }

  private newShape(): StreamShape {
    const array = this.random() < 0.3;
    const n = int(this.random, 7);
    const keys = [...SHAPE_KEYS].sort(() => this.random() - 0.5).slice(0, n);
    return { array, keys, types: keys.map(() => pick(this.random, SHAPED_TYPES)) };
  }

  private mutate(): void {
    const r = this.random();
    const { keys, types } = this.shape;
    if (r < 0.3 && keys.length < SHAPE_KEYS.length) {
      const key = SHAPE_KEYS.find((k) => !keys.includes(k))!;
      keys.push(key);
      types.push(pick(this.random, SHAPED_TYPES));
    } else if (r < 0.5 && keys.length > 0) {
      keys.pop();
      types.pop();
    } else if (r < 0.8 && types.length > 0) {
      types[int(this.random, types.length)] = pick(this.random, SHAPED_TYPES);
    } else {
      this.shape = this.newShape();
    }
  }

  private value(type: ShapedType): unknown {
    switch (type) {
      case 'ascii':
        return 'x'.repeat(int(this.random, 300)).replace(/x/g, () => String.fromCharCode(32 + int(this.random, 95)));
      case 'text':
        return this.soup.string(this.random, int(this.random, this.random() < 0.1 ? 2000 : 40));
      case 'int':
        return this.random() < 0.3 ? pick(this.random, EDGE_NUMBERS.filter(Number.isInteger)) : int(this.random, 2 ** 31) - 2 ** 30;
      case 'float':
        return this.random() < 0.5 ? pick(this.random, EDGE_NUMBERS) : (this.random() - 0.5) * 10 ** int(this.random, 40);
      case 'bool':
        return this.random() < 0.5;
      case 'null':
        return null;
    }
  }
}

import type { Exchangeable } from '../../src/job/api/Exchangeable.js';

/**
 * Accepts a value only if its type is Exchangeable; returns it unchanged. The
 * accepted shapes below go through it, so `tsc` checks each one, and
 * test/unit/exchangeable.test.ts round-trips the same values through the engine's
 * serializer: what the compiler accepts really crosses an exchange.
 */
export function exchangeable<T>(value: T & NoInfer<Exchangeable<T>>): T {
  return value;
}

interface Reading {
  sensor: string;
  at: Date;
  values: readonly number[];
  note?: string;
}

/** A class without methods: its instances arrive as plain objects with the same fields. */
class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
}

type Tree = { label: string; children: Tree[] };

/** Every kind of value the Exchangeable type accepts, by name. */
export const ACCEPTED_SHAPES = {
  string: exchangeable('é 日本 🙂'),
  integer: exchangeable(42),
  float: exchangeable(-2.5),
  nan: exchangeable(Number.NaN),
  infinity: exchangeable(Number.NEGATIVE_INFINITY),
  boolean: exchangeable(true),
  null: exchangeable(null),
  undefined: exchangeable(undefined),
  bigint: exchangeable(-(2n ** 63n)),
  tuple: exchangeable<[word: string, count: number]>(['spill', 3]),
  array: exchangeable([1, 2, 3]),
  readonlyArray: exchangeable<readonly string[]>(['a', 'b']),
  emptyArray: exchangeable<number[]>([]),
  plainObject: exchangeable({ id: 7, name: 'x', nested: { deep: [true, null] } }),
  interfaceRecord: exchangeable<Reading>({ sensor: 's1', at: new Date(1_700_000_000_123), values: [1.5, 2] }),
  optionalField: exchangeable<Reading>({ sensor: 's2', at: new Date(0), values: [], note: 'n' }),
  undefinedField: exchangeable<{ a: number | undefined }>({ a: undefined }),
  classWithoutMethods: exchangeable(new Point(1, 2)),
  recursive: exchangeable<Tree>({ label: 'root', children: [{ label: 'leaf', children: [] }] }),
  uint8Array: exchangeable(new Uint8Array([0, 1, 255])),
  bytesInObject: exchangeable({ key: 'k', bytes: new Uint8Array([9, 8]) }),
  date: exchangeable(new Date(86_400_000)),
  map: exchangeable(new Map<string | number, { n: number }>([['a', { n: 1 }], [2, { n: 2 }]])),
  readonlyMap: exchangeable<ReadonlyMap<string, Date>>(new Map([['epoch', new Date(0)]])),
  nestedMap: exchangeable({ index: new Map([['w', new Map([[1, [1, 2]]])]]) }),
  union: exchangeable<string | number[]>([4]),
} as const;

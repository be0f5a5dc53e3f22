/**
 * SQL's aggregate functions (COUNT, SUM, MIN, MAX, AVG, with DISTINCT and FILTER, and the
 * user's aggregate functions) as one accumulator of a row: an array with a slot per call.
 * Retractable, for an input that is itself an updating result: MIN, MAX and DISTINCT keep
 * a count per value. Accumulators are plain data (arrays, numbers, objects of counts), so
 * they cross exchanges and land in checkpoints as they are.
 */
import type { Expr, SqlType } from '../parser/Ast.js';
import { SqlError } from '../SqlError.js';
import { ANY, BIGINT, DOUBLE, isIntegral } from '../Types.js';
import { compile, type Env, type RowFn, toFunction, toPredicate } from './Expressions.js';

/** A user's aggregate function: the module's default export, an object of these four. */
export interface UserAggregate {
  create(): unknown;
  add(accumulator: unknown, ...args: unknown[]): unknown;
  merge(a: unknown, b: unknown): unknown;
  result(accumulator: unknown): unknown;
}

/** One aggregate call, bound: what it computes, of which argument, with which filter. */
export interface AggregateCall {
  name: string;
  distinct: boolean;
  /** The argument's code; undefined for COUNT(*). */
  arg?: string;
  filter?: string;
  type: SqlType;
  /** A user's aggregate, by its index among the job's functions. */
  udf?: number;
}

/** Counts per value (for MIN, MAX and DISTINCT), keyed by the value's JSON. */
type Counts = Record<string, number>;

export function bindAggregate(e: Extract<Expr, { k: 'call' }>, env: Env, udas: Map<string, number>): AggregateCall {
  const uda = udas.get(e.name);
  if (uda !== undefined) return { name: e.name, distinct: false, arg: e.args.map((a) => compile(a, env).code).join(', '), type: ANY, udf: uda };
  if (e.args.length > 1) throw SqlError.at('SPW_ERR_SQL_TYPE', `${e.name} takes one argument`, env.text, e.at);
  if (e.star && e.name !== 'COUNT') throw SqlError.at('SPW_ERR_SQL_TYPE', `${e.name}(*) is not an aggregate: only COUNT(*)`, env.text, e.at);
  const arg = e.args[0] === undefined ? undefined : compile(e.args[0], env);
  if (arg === undefined && !e.star) throw SqlError.at('SPW_ERR_SQL_TYPE', `${e.name} needs an argument`, env.text, e.at);
  const filter = e.filter === undefined ? undefined : compile(e.filter, env).code;
  const type = e.name === 'COUNT' ? BIGINT : e.name === 'AVG' ? (isIntegral(arg!.type) ? BIGINT : DOUBLE) : e.name === 'SUM' ? (isIntegral(arg!.type) ? BIGINT : DOUBLE) : arg!.type;
  return { name: e.name, distinct: e.distinct, arg: arg?.code, filter, type };
}

/**
 * The accumulator of several calls over one input: `add` and `retract` a row, `merge` two
 * accumulators (map-side combine, session windows), `result` the calls' values in order.
 */
export interface Accumulator {
  create(): unknown[];
  add(acc: unknown[], row: unknown[]): unknown[];
  retract(acc: unknown[], row: unknown[]): unknown[];
  merge(a: unknown[], b: unknown[]): unknown[];
  result(acc: unknown[]): unknown[];
  /** Rows the accumulator holds, net of retractions: 0 means the group is empty. */
  count(acc: unknown[]): number;
}

interface Slot {
  create(): unknown;
  add(state: unknown, row: unknown[], sign: 1 | -1): unknown;
  merge(a: unknown, b: unknown): unknown;
  result(state: unknown): unknown;
}

/**
 * The accumulator of `calls`; `udfs` are the job's user functions by index; `retractable`
 * for an updating input, whose rows may be taken back.
 */
export function accumulator(calls: readonly AggregateCall[], udfs: readonly unknown[], retractable: boolean): Accumulator {
  const slots = calls.map((c) => slot(c, udfs, retractable));
  const n = slots.length;
  return {
    // The last slot counts rows, for an updating input: a group whose rows are all retracted is deleted.
    create: () => [...slots.map((s) => s.create()), 0],
    add: (acc, row) => {
      for (let i = 0; i < n; i++) acc[i] = slots[i]!.add(acc[i], row, 1);
      acc[n] = (acc[n] as number) + 1;
      return acc;
    },
    retract: (acc, row) => {
      for (let i = 0; i < n; i++) acc[i] = slots[i]!.add(acc[i], row, -1);
      acc[n] = (acc[n] as number) - 1;
      return acc;
    },
    merge: (a, b) => {
      for (let i = 0; i < n; i++) a[i] = slots[i]!.merge(a[i], b[i]);
      a[n] = (a[n] as number) + (b[n] as number);
      return a;
    },
    result: (acc) => {
      const out = new Array<unknown>(n);
      for (let i = 0; i < n; i++) out[i] = slots[i]!.result(acc[i]);
      return out;
    },
    count: (acc) => acc[n] as number,
  };
}

function slot(call: AggregateCall, udfs: readonly unknown[], retractable: boolean): Slot {
  const arg: RowFn | undefined = call.arg === undefined ? undefined : toFunction(call.udf === undefined ? call.arg : `[${call.arg}]`, udfs as never);
  const filter = call.filter === undefined ? undefined : toPredicate(call.filter, udfs as never);
  const base = call.udf !== undefined ? userSlot(udfs[call.udf] as UserAggregate) : call.distinct ? distinctSlot(call.name) : builtinSlot(call.name, retractable);
  if (call.name === 'AVG' && call.type.name === 'BIGINT') {
    // Flink's AVG of an integral column is integral, truncated.
    const average = base.result;
    base.result = (s) => {
      const value = average(s);
      return value === null ? null : Math.trunc(value as number);
    };
  }
  if (call.udf !== undefined) {
    return { ...base, add: (state, row, sign) => (filter && !filter(row) ? state : base.add(state, arg!(row) as unknown[], sign)) };
  }
  return {
    ...base,
    add: (state, row, sign) => {
      if (filter !== undefined && !filter(row)) return state;
      const value = arg === undefined ? 1 : arg(row);
      if (value === null || value === undefined) return state;
      return base.add(state, value as never, sign);
    },
  };
}

/** The slots of the built-in aggregates; `add` gets the argument's value (1 for COUNT(*)), never null. */
function builtinSlot(name: string, retractable: boolean): Slot {
  switch (name) {
    case 'COUNT':
      return { create: () => 0, add: (s, _v, sign) => (s as number) + sign, merge: (a, b) => (a as number) + (b as number), result: (s) => s };
    case 'SUM':
      return {
        create: () => [0, 0],
        add: (s, v, sign) => [(s as number[])[0]! + sign * (v as unknown as number), (s as number[])[1]! + sign],
        merge: (a, b) => [(a as number[])[0]! + (b as number[])[0]!, (a as number[])[1]! + (b as number[])[1]!],
        result: (s) => ((s as number[])[1] === 0 ? null : (s as number[])[0]),
      };
    case 'AVG':
      return {
        create: () => [0, 0],
        add: (s, v, sign) => [(s as number[])[0]! + sign * (v as unknown as number), (s as number[])[1]! + sign],
        merge: (a, b) => [(a as number[])[0]! + (b as number[])[0]!, (a as number[])[1]! + (b as number[])[1]!],
        result: (s) => ((s as number[])[1] === 0 ? null : (s as number[])[0]! / (s as number[])[1]!),
      };
    case 'MIN':
    case 'MAX': {
      const better = name === 'MIN' ? (a: unknown, b: unknown) => compareValues(a, b) < 0 : (a: unknown, b: unknown) => compareValues(a, b) > 0;
      if (!retractable) {
        return {
          create: () => null,
          add: (s, v) => (s === null || better(v, s) ? v : s),
          merge: (a, b) => (a === null ? b : b === null ? a : better(b, a) ? b : a),
          result: (s) => s,
        };
      }
      return {
        create: () => ({}),
        add: (s, v, sign) => countValue(s as Counts, v, sign),
        merge: (a, b) => mergeCounts(a as Counts, b as Counts),
        result: (s) => {
          let best: unknown = null;
          for (const key of Object.keys(s as Counts)) {
            const value = keyValue(key);
            if (best === null || better(value, best)) best = value;
          }
          return best;
        },
      };
    }
    default:
      throw new SqlError('SPW_ERR_SQL_UNKNOWN_FUNCTION', `unknown aggregate ${name}`, undefined, undefined);
  }
}

/** The key of a value in a count-per-value object: strings and numbers kept apart. */
const valueKey = (v: unknown): string => (typeof v === 'string' ? `s${v}` : JSON.stringify(v));
const keyValue = (key: string): unknown => (key.startsWith('s') ? key.slice(1) : JSON.parse(key));

/**
 * An aggregate of the distinct values: a count per value, so that a retraction knows when a
 * value is gone, and the number of values, so that COUNT(DISTINCT) is read in constant time.
 */
function distinctSlot(name: string): Slot {
  const inner = builtinSlot(name, false);
  type Distinct = { c: Counts; n: number };
  return {
    create: (): Distinct => ({ c: {}, n: 0 }),
    add: (s, v, sign) => {
      const d = s as Distinct;
      const key = valueKey(v);
      const before = d.c[key] ?? 0;
      const after = before + sign;
      if (after <= 0) delete d.c[key];
      else d.c[key] = after;
      d.n += (after > 0 ? 1 : 0) - (before > 0 ? 1 : 0);
      return d;
    },
    merge: (a, b) => {
      const x = a as Distinct;
      for (const [key, count] of Object.entries((b as Distinct).c)) {
        if (x.c[key] === undefined) x.n++;
        x.c[key] = (x.c[key] ?? 0) + count;
      }
      return x;
    },
    result: (s) => {
      const d = s as Distinct;
      if (name === 'COUNT') return d.n;
      let state = inner.create();
      for (const key of Object.keys(d.c)) state = inner.add(state, keyValue(key) as never, 1);
      return inner.result(state);
    },
  };
}

function countValue(counts: Counts, value: unknown, sign: 1 | -1): Counts {
  const key = valueKey(value);
  const next = (counts[key] ?? 0) + sign;
  if (next <= 0) delete counts[key];
  else counts[key] = next;
  return counts;
}

function mergeCounts(a: Counts, b: Counts): Counts {
  for (const [key, count] of Object.entries(b)) a[key] = (a[key] ?? 0) + count;
  return a;
}

function userSlot(fn: UserAggregate): Slot {
  return {
    create: () => fn.create(),
    add: (s, args, sign) => {
      if (sign === -1) throw new SqlError('SPW_ERR_SQL_UNSUPPORTED', 'a JavaScript aggregate function cannot retract: give it an append-only input', undefined, undefined);
      return fn.add(s, ...(args as unknown as unknown[]));
    },
    merge: (a, b) => fn.merge(a, b),
    result: (s) => fn.result(s),
  };
}

/** SQL's order of two non-null values: numbers by value, the rest as strings. */
export function compareValues(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Flink's built-in scalar functions and operators as plain functions over row values, with
 * SQL's nulls (an operand that is null makes null). Compiled expressions call them as
 * `F.name(...)`; each is small enough for V8 to inline.
 */

import { toInstant, toLocal } from '../TimeZone.js';

type V = unknown;

const isNull = (v: V): boolean => v === null || v === undefined;

/** Java's SimpleDateFormat letters that DATE_FORMAT takes, over a UTC date. */
function dateFormat(ms: number, pattern: string): string {
  const d = new Date(ms);
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  return pattern.replace(/yyyy|MM|dd|HH|mm|ss|SSS/g, (token) => {
    switch (token) {
      case 'yyyy':
        return String(d.getUTCFullYear());
      case 'MM':
        return pad(d.getUTCMonth() + 1);
      case 'dd':
        return pad(d.getUTCDate());
      case 'HH':
        return pad(d.getUTCHours());
      case 'mm':
        return pad(d.getUTCMinutes());
      case 'ss':
        return pad(d.getUTCSeconds());
      default:
        return pad(d.getUTCMilliseconds(), 3);
    }
  });
}

/** Epoch ms of `yyyy-MM-dd[ HH:mm:ss[.SSS]]`, read as UTC. */
function parseTimestamp(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?/.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', ms = '0'] = m;
  return Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), Number(ms.padEnd(3, '0')));
}

const regexCache = new Map<string, RegExp>();
function regex(pattern: string, flags = ''): RegExp {
  const key = `${flags}/${pattern}`;
  let r = regexCache.get(key);
  if (!r) {
    r = new RegExp(pattern, flags);
    regexCache.set(key, r);
  }
  return r;
}

/** SQL LIKE as a RegExp: `%` any run, `_` one character. */
function likeRegex(pattern: string): RegExp {
  const key = `like/${pattern}`;
  let r = regexCache.get(key);
  if (!r) {
    r = new RegExp(`^${pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/%/g, '[\\s\\S]*').replace(/_/g, '[\\s\\S]')}$`);
    regexCache.set(key, r);
  }
  return r;
}

function compare(a: V, b: V): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export const FUNCTIONS = {
  add: (a: V, b: V): V => (isNull(a) || isNull(b) ? null : (a as number) + (b as number)),
  sub: (a: V, b: V): V => (isNull(a) || isNull(b) ? null : (a as number) - (b as number)),
  mul: (a: V, b: V): V => (isNull(a) || isNull(b) ? null : (a as number) * (b as number)),
  div: (a: V, b: V): V => (isNull(a) || isNull(b) || b === 0 ? null : (a as number) / (b as number)),
  /** Integer division of integral operands, truncating as Java's does. */
  idiv: (a: V, b: V): V => (isNull(a) || isNull(b) || b === 0 ? null : Math.trunc((a as number) / (b as number))),
  mod: (a: V, b: V): V => (isNull(a) || isNull(b) || b === 0 ? null : (a as number) % (b as number)),
  neg: (a: V): V => (isNull(a) ? null : -(a as number)),
  eq: (a: V, b: V): V => (isNull(a) || isNull(b) ? null : a === b || compare(a, b) === 0),
  ne: (a: V, b: V): V => (isNull(a) || isNull(b) ? null : !(a === b || compare(a, b) === 0)),
  lt: (a: V, b: V): V => (isNull(a) || isNull(b) ? null : compare(a, b) < 0),
  le: (a: V, b: V): V => (isNull(a) || isNull(b) ? null : compare(a, b) <= 0),
  gt: (a: V, b: V): V => (isNull(a) || isNull(b) ? null : compare(a, b) > 0),
  ge: (a: V, b: V): V => (isNull(a) || isNull(b) ? null : compare(a, b) >= 0),
  /** Three-valued AND and OR: false wins over null in AND, true in OR. */
  and: (a: V, b: V): V => (a === false || b === false ? false : isNull(a) || isNull(b) ? null : true),
  or: (a: V, b: V): V => (a === true || b === true ? true : isNull(a) || isNull(b) ? null : false),
  not: (a: V): V => (isNull(a) ? null : !a),
  concat: (...args: V[]): V => (args.some(isNull) ? null : args.map(String).join('')),
  like: (a: V, p: V): V => (isNull(a) || isNull(p) ? null : likeRegex(String(p)).test(String(a))),
  upper: (a: V): V => (isNull(a) ? null : String(a).toUpperCase()),
  lower: (a: V): V => (isNull(a) ? null : String(a).toLowerCase()),
  trim: (a: V): V => (isNull(a) ? null : String(a).trim()),
  charLength: (a: V): V => (isNull(a) ? null : String(a).length),
  /** SUBSTRING(s, start [, length]): 1-based, as SQL's. */
  substring: (a: V, start: V, length?: V): V => {
    if (isNull(a) || isNull(start)) return null;
    const s = String(a);
    const from = Math.max(0, (start as number) - 1);
    return length === undefined || length === null ? s.slice(from) : s.slice(from, from + (length as number));
  },
  /** SPLIT_INDEX(s, delimiter, i): the i-th (0-based) part, or null past the last. */
  splitIndex: (a: V, delimiter: V, index: V): V => {
    if (isNull(a) || isNull(delimiter) || isNull(index)) return null;
    const part = String(a).split(String(delimiter))[index as number];
    return part === undefined ? null : part;
  },
  /** REGEXP_EXTRACT(s, pattern [, group]): the group of the first match, or null. */
  regexpExtract: (a: V, pattern: V, group?: V): V => {
    if (isNull(a) || isNull(pattern)) return null;
    const m = regex(String(pattern)).exec(String(a));
    if (!m) return null;
    const g = m[group === undefined || group === null ? 0 : (group as number)];
    return g === undefined ? null : g;
  },
  regexpReplace: (a: V, pattern: V, replacement: V): V => (isNull(a) || isNull(pattern) || isNull(replacement) ? null : String(a).replace(regex(String(pattern), 'g'), String(replacement))),
  coalesce: (...args: V[]): V => {
    for (const a of args) if (!isNull(a)) return a;
    return null;
  },
  nullif: (a: V, b: V): V => (a === b ? null : a),
  abs: (a: V): V => (isNull(a) ? null : Math.abs(a as number)),
  floor: (a: V): V => (isNull(a) ? null : Math.floor(a as number)),
  ceil: (a: V): V => (isNull(a) ? null : Math.ceil(a as number)),
  round: (a: V, digits?: V): V => {
    if (isNull(a)) return null;
    const f = 10 ** ((digits as number | undefined) ?? 0);
    return Math.round((a as number) * f) / f;
  },
  power: (a: V, b: V): V => (isNull(a) || isNull(b) ? null : (a as number) ** (b as number)),
  sqrt: (a: V): V => (isNull(a) ? null : Math.sqrt(a as number)),
  dateFormat: (a: V, pattern: V): V => (isNull(a) || isNull(pattern) ? null : dateFormat(typeof a === 'number' ? a : (parseTimestamp(String(a)) ?? NaN), String(pattern))),
  /** TO_TIMESTAMP_LTZ(n, precision): epoch seconds (0) or milliseconds (3) as a timestamp. */
  toTimestampLtz: (a: V, precision: V): V => (isNull(a) ? null : precision === 0 ? (a as number) * 1000 : (a as number)),
  toTimestamp: (a: V): V => (isNull(a) ? null : typeof a === 'number' ? a : parseTimestamp(String(a))),
  timestampLiteral: (a: V): V => parseTimestamp(String(a)),
  extract: (unit: string, a: V): V => {
    if (isNull(a)) return null;
    const d = new Date(a as number);
    switch (unit) {
      case 'YEAR':
        return d.getUTCFullYear();
      case 'MONTH':
        return d.getUTCMonth() + 1;
      case 'DAY':
        return d.getUTCDate();
      case 'HOUR':
        return d.getUTCHours();
      case 'MINUTE':
        return d.getUTCMinutes();
      case 'SECOND':
        return d.getUTCSeconds();
      case 'MILLISECOND':
        return d.getUTCMilliseconds();
      default:
        return null;
    }
  },
  proctime: (): V => Date.now(),
  /** A TIMESTAMP_LTZ's wall clock in a zone (a TIMESTAMP), and back. */
  toLocal: (a: V, zone: string): V => (isNull(a) ? null : toLocal(a as number, zone)),
  toInstant: (a: V, zone: string): V => (isNull(a) ? null : toInstant(a as number, zone)),
  /** CURRENT_DATE: today in a zone. */
  currentDate: (zone: string): V => {
    const wall = toLocal(Date.now(), zone);
    return wall - (wall % 86_400_000);
  },
  /** A TIMESTAMP as Flink casts it to STRING: `2026-12-07 10:00:00.000`. */
  timestampText: (a: V): V => (isNull(a) ? null : new Date(a as number).toISOString().replace('T', ' ').replace('Z', '')),
  /** CAST to a type, by its canonical name. */
  cast: (a: V, type: string): V => {
    if (isNull(a)) return null;
    switch (type) {
      case 'INT':
      case 'BIGINT': {
        if (typeof a === 'boolean') return a ? 1 : 0;
        const n = Number(a);
        return Number.isFinite(n) ? Math.trunc(n) : null;
      }
      case 'DOUBLE':
      case 'DECIMAL': {
        const n = Number(a);
        return Number.isFinite(n) ? n : null;
      }
      case 'STRING':
        return typeof a === 'string' ? a : String(a);
      case 'BOOLEAN':
        return typeof a === 'boolean' ? a : String(a).toLowerCase() === 'true';
      case 'TIMESTAMP':
      case 'TIMESTAMP_LTZ':
      case 'DATE':
        return typeof a === 'number' ? a : parseTimestamp(String(a));
      default:
        return a;
    }
  },
  /** A ROW field of a value that may be null. */
  field: (a: V, name: string): V => (isNull(a) ? null : ((a as Record<string, V>)[name] ?? null)),
  /** `a[i]` of an ARRAY (1-based) or a MAP. */
  item: (a: V, i: V): V => (isNull(a) || isNull(i) ? null : Array.isArray(a) ? (a[(i as number) - 1] ?? null) : ((a as Record<string, V>)[String(i)] ?? null)),
};

export type FunctionLibrary = typeof FUNCTIONS;

/** Built-in scalar functions by SQL name: the library's member each calls, and its arity range. */
export const SCALAR_FUNCTIONS: Record<string, { fn: keyof FunctionLibrary; min: number; max: number }> = {
  UPPER: { fn: 'upper', min: 1, max: 1 },
  LOWER: { fn: 'lower', min: 1, max: 1 },
  TRIM: { fn: 'trim', min: 1, max: 1 },
  CHAR_LENGTH: { fn: 'charLength', min: 1, max: 1 },
  CHARACTER_LENGTH: { fn: 'charLength', min: 1, max: 1 },
  SUBSTRING: { fn: 'substring', min: 2, max: 3 },
  SUBSTR: { fn: 'substring', min: 2, max: 3 },
  CONCAT: { fn: 'concat', min: 1, max: 64 },
  SPLIT_INDEX: { fn: 'splitIndex', min: 3, max: 3 },
  REGEXP_EXTRACT: { fn: 'regexpExtract', min: 2, max: 3 },
  REGEXP_REPLACE: { fn: 'regexpReplace', min: 3, max: 3 },
  COALESCE: { fn: 'coalesce', min: 1, max: 64 },
  IFNULL: { fn: 'coalesce', min: 2, max: 2 },
  NULLIF: { fn: 'nullif', min: 2, max: 2 },
  MOD: { fn: 'mod', min: 2, max: 2 },
  ABS: { fn: 'abs', min: 1, max: 1 },
  FLOOR: { fn: 'floor', min: 1, max: 1 },
  CEIL: { fn: 'ceil', min: 1, max: 1 },
  CEILING: { fn: 'ceil', min: 1, max: 1 },
  ROUND: { fn: 'round', min: 1, max: 2 },
  POWER: { fn: 'power', min: 2, max: 2 },
  SQRT: { fn: 'sqrt', min: 1, max: 1 },
  DATE_FORMAT: { fn: 'dateFormat', min: 2, max: 2 },
  TO_TIMESTAMP_LTZ: { fn: 'toTimestampLtz', min: 2, max: 2 },
  TO_TIMESTAMP: { fn: 'toTimestamp', min: 1, max: 2 },
  TIMESTAMP_LITERAL: { fn: 'timestampLiteral', min: 1, max: 1 },
  DATE_LITERAL: { fn: 'timestampLiteral', min: 1, max: 1 },
  PROCTIME: { fn: 'proctime', min: 0, max: 0 },
  NOW: { fn: 'proctime', min: 0, max: 0 },
  CURRENT_TIMESTAMP: { fn: 'proctime', min: 0, max: 0 },
};

/** The time functions HOUR(ts), MINUTE(ts), ...: EXTRACT of that unit. */
export const EXTRACT_FUNCTIONS = new Set(['YEAR', 'MONTH', 'DAYOFMONTH', 'HOUR', 'MINUTE', 'SECOND']);

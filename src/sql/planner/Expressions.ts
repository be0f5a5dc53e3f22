/**
 * Binds an expression to the fields of its input and compiles it, once per task, into a plain
 * function of a row (an array of values): the source text of one arrow function, made with
 * `new Function`, that calls the function library (Functions.ts) and the user's functions
 * directly. Nothing is interpreted per row.
 */
import type { Expr, SqlType } from '../parser/Ast.js';
import { SqlError } from '../SqlError.js';
import { ANY, BIGINT, BOOLEAN, canonicalTypeName, DOUBLE, isIntegral, STRING, TIMESTAMP, typeOf } from '../Types.js';
import { EXTRACT_FUNCTIONS, FUNCTIONS, SCALAR_FUNCTIONS } from './Functions.js';

/** One column of a relation: its name, the table alias it can be qualified with, its type. */
export interface Field {
  name: string;
  qualifier?: string;
  type: SqlType;
  /** Left out of `*` (a Top-N's rank, which only its ROW_NUMBER item selects). */
  hidden?: boolean;
}

/** A user's scalar function, by upper-case name: its index among the job's functions. */
export type UserFunctions = Map<string, number>;

export interface Env {
  fields: readonly Field[];
  /** The statement's text, for errors. */
  text: string;
  udfs: UserFunctions;
  /** Expressions already computed into a field (GROUP BY keys, aggregates), by canonical form. */
  computed?: Map<string, number>;
  /** The fields `computed`'s canonical forms were made over (the input of a GROUP BY). */
  canonicalFields?: readonly Field[];
  /** The session's `table.local-time-zone`: where a TIMESTAMP_LTZ is a wall clock. */
  timeZone: string;
}

export interface Compiled {
  code: string;
  type: SqlType;
}

export type RowFn = (row: unknown[]) => unknown;

export const AGGREGATES = new Set(['COUNT', 'SUM', 'MIN', 'MAX', 'AVG']);

/** The field an identifier names: `col`, `alias.col`, or a ROW column's field (`person.id`); with the parts left over as ROW fields. */
export function resolveColumn(parts: readonly string[], env: Env, at: number): { index: number; rest: string[] } {
  const { fields } = env;
  const find = (match: (f: Field) => boolean): number[] => fields.flatMap((f, i) => (match(f) ? [i] : []));
  const byName = (name: string, qualifier?: string): number[] => {
    const exact = find((f) => f.name === name && (qualifier === undefined || f.qualifier === qualifier));
    if (exact.length > 0) return exact;
    const lower = name.toLowerCase();
    return find((f) => f.name.toLowerCase() === lower && (qualifier === undefined || f.qualifier?.toLowerCase() === qualifier.toLowerCase()));
  };
  if (parts.length >= 2) {
    const qualified = byName(parts[1]!, parts[0]);
    if (qualified.length === 1) return { index: qualified[0]!, rest: parts.slice(2) };
  }
  const plain = byName(parts[0]!);
  if (plain.length > 1) throw SqlError.at('SPW_ERR_SQL_UNKNOWN_COLUMN', `column ${parts[0]} is ambiguous: qualify it with its table`, env.text, at);
  if (plain.length === 1) return { index: plain[0]!, rest: parts.slice(1) };
  throw SqlError.at('SPW_ERR_SQL_UNKNOWN_COLUMN', `unknown column ${parts.join('.')}`, env.text, at);
}

/** An expression's canonical form, the same for `Q.category` and `category` when both name one field. */
export function canonical(e: Expr, env: Env): string {
  return JSON.stringify(e, (key, value: unknown) => {
    if (key === 'at') return undefined;
    if (value && typeof value === 'object' && (value as Expr).k === 'col') {
      try {
        const { index, rest } = resolveColumn((value as { parts: string[] }).parts, env, 0);
        return `#${index}${rest.map((r) => `.${r}`).join('')}`;
      } catch {
        return value;
      }
    }
    return value;
  });
}

/** The code and type of an expression over `env`'s fields (the row is `r`). */
export function compile(e: Expr, env: Env): Compiled {
  if (env.computed && e.k !== 'lit') {
    const index = env.computed.get(canonical(e, env.canonicalFields ? { ...env, fields: env.canonicalFields } : env));
    if (index !== undefined) return { code: `r[${index}]`, type: env.fields[index]!.type };
  }
  switch (e.k) {
    case 'lit':
      return { code: e.v === null ? 'null' : JSON.stringify(e.v), type: e.v === null ? typeOf('NULL') : typeof e.v === 'number' ? (Number.isInteger(e.v) ? typeOf('INT') : typeOf('DECIMAL')) : typeof e.v === 'boolean' ? BOOLEAN : STRING };
    case 'interval':
      return { code: String(e.ms), type: typeOf('INTERVAL') };
    case 'col': {
      const { index, rest } = resolveColumn(e.parts, env, e.at);
      let code = `r[${index}]`;
      let type = env.fields[index]!.type;
      for (const name of rest) {
        const field = type.fields?.find((f) => f.name === name) ?? type.fields?.find((f) => f.name.toLowerCase() === name.toLowerCase());
        if (type.name !== 'ANY' && field === undefined) throw SqlError.at('SPW_ERR_SQL_UNKNOWN_COLUMN', `unknown field ${name} of ${e.parts.join('.')}`, env.text, e.at);
        code = `F.field(${code}, ${JSON.stringify(field?.name ?? name)})`;
        type = field?.type ?? ANY;
      }
      return { code, type };
    }
    case 'star':
      throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', '* stands only in a SELECT list or COUNT(*)', env.text, e.at);
    case 'un': {
      const x = compile(e.e, env);
      return e.op === 'NOT' ? { code: `F.not(${x.code})`, type: BOOLEAN } : { code: `F.neg(${x.code})`, type: x.type };
    }
    case 'bin':
      return binary(e, env);
    case 'isnull': {
      const x = compile(e.e, env);
      return { code: `(${x.code} ${e.not ? '!=' : '=='} null)`, type: BOOLEAN };
    }
    case 'between': {
      const x = compile(e.e, env);
      const lo = compile(e.lo, env);
      const hi = compile(e.hi, env);
      const test = `F.and(F.ge(${x.code}, ${lo.code}), F.le(${x.code}, ${hi.code}))`;
      return { code: e.not ? `F.not(${test})` : test, type: BOOLEAN };
    }
    case 'in': {
      const x = compile(e.e, env);
      const list = e.list.map((item) => compile(item, env).code);
      const test = `((v) => v == null ? null : [${list.join(', ')}].includes(v))(${x.code})`;
      return { code: e.not ? `F.not(${test})` : test, type: BOOLEAN };
    }
    case 'like': {
      const test = `F.like(${compile(e.e, env).code}, ${compile(e.pattern, env).code})`;
      return { code: e.not ? `F.not(${test})` : test, type: BOOLEAN };
    }
    case 'case': {
      let code = e.otherwise ? compile(e.otherwise, env).code : 'null';
      let type: SqlType = e.otherwise ? compile(e.otherwise, env).type : typeOf('NULL');
      const operand = e.operand ? compile(e.operand, env).code : undefined;
      for (const { when, then } of [...e.whens].reverse()) {
        const test = operand === undefined ? compile(when, env).code : `F.eq(${operand}, ${compile(when, env).code})`;
        const result = compile(then, env);
        if (type.name === 'NULL') type = result.type;
        code = `(${test} === true ? ${result.code} : ${code})`;
      }
      return { code, type };
    }
    case 'cast':
      return cast(e, env);
    case 'extract':
      return { code: `F.extract(${JSON.stringify(e.unit)}, ${wallClock(compile(e.e, env), env)})`, type: BIGINT };
    case 'call':
      return call(e, env);
  }
}

/** The code of a time value as a wall clock: a TIMESTAMP_LTZ in the session's zone, any other as it is. */
function wallClock(x: Compiled, env: Env): string {
  return x.type.name === 'TIMESTAMP_LTZ' && env.timeZone !== 'UTC' ? `F.toLocal(${x.code}, ${JSON.stringify(env.timeZone)})` : x.code;
}

/** CAST: between TIMESTAMP_LTZ and TIMESTAMP (or STRING, DATE) through the session's zone, as Flink's. */
function cast(e: Extract<Expr, { k: 'cast' }>, env: Env): Compiled {
  const name = canonicalTypeName(e.type.name);
  if (name === undefined) throw SqlError.at('SPW_ERR_SQL_TYPE', `unknown type ${e.type.name}`, env.text, e.at);
  const x = compile(e.e, env);
  const type = { ...e.type, name };
  const time = x.type.name === 'TIMESTAMP' || x.type.name === 'TIMESTAMP_LTZ';
  if (time && name === 'STRING') return { code: `F.timestampText(${wallClock(x, env)})`, type };
  if (x.type.name === 'TIMESTAMP_LTZ' && (name === 'TIMESTAMP' || name === 'DATE')) return { code: `F.cast(${wallClock(x, env)}, ${JSON.stringify(name)})`, type };
  if (name === 'TIMESTAMP_LTZ' && x.type.name !== 'TIMESTAMP_LTZ' && x.type.name !== 'INT' && x.type.name !== 'BIGINT' && env.timeZone !== 'UTC') {
    return { code: `F.toInstant(F.cast(${x.code}, "TIMESTAMP"), ${JSON.stringify(env.timeZone)})`, type };
  }
  return { code: `F.cast(${x.code}, ${JSON.stringify(name)})`, type };
}

const COMPARISONS: Record<string, string> = { '=': 'eq', '<>': 'ne', '<': 'lt', '<=': 'le', '>': 'gt', '>=': 'ge' };

function binary(e: Extract<Expr, { k: 'bin' }>, env: Env): Compiled {
  const l = compile(e.l, env);
  const r = compile(e.r, env);
  if (e.op === 'AND') return { code: `F.and(${l.code}, ${r.code})`, type: BOOLEAN };
  if (e.op === 'OR') return { code: `F.or(${l.code}, ${r.code})`, type: BOOLEAN };
  if (e.op === '||') return { code: `F.concat(${l.code}, ${r.code})`, type: STRING };
  const comparison = COMPARISONS[e.op];
  if (comparison) return { code: `F.${comparison}(${l.code}, ${r.code})`, type: BOOLEAN };
  const integral = isIntegral(l.type) && isIntegral(r.type);
  const type = l.type.name === 'TIMESTAMP' || l.type.name === 'TIMESTAMP_LTZ' ? l.type : integral ? BIGINT : l.type.name === 'INTERVAL' ? r.type : DOUBLE;
  const fn = { '+': 'add', '-': 'sub', '*': 'mul', '/': integral ? 'idiv' : 'div', '%': 'mod' }[e.op];
  if (fn === undefined) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', `unknown operator ${e.op}`, env.text, e.at);
  return { code: `F.${fn}(${l.code}, ${r.code})`, type };
}

function call(e: Extract<Expr, { k: 'call' }>, env: Env): Compiled {
  if (AGGREGATES.has(e.name) || e.over) {
    throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', `${e.name} stands only in the SELECT list or HAVING of a query that groups`, env.text, e.at);
  }
  const args = e.args.map((a) => compile(a, env));
  const argCode = args.map((a) => a.code).join(', ');
  const udf = env.udfs.get(e.name);
  if (udf !== undefined) return { code: `U[${udf}](${argCode})`, type: ANY };
  if (EXTRACT_FUNCTIONS.has(e.name)) {
    if (args.length !== 1) throw SqlError.at('SPW_ERR_SQL_TYPE', `${e.name} takes one argument`, env.text, e.at);
    return { code: `F.extract(${JSON.stringify(e.name === 'DAYOFMONTH' ? 'DAY' : e.name)}, ${wallClock(args[0]!, env)})`, type: BIGINT };
  }
  const zone = JSON.stringify(env.timeZone);
  if (e.name === 'LOCALTIMESTAMP' && args.length === 0) return { code: `F.toLocal(F.proctime(), ${zone})`, type: TIMESTAMP };
  if (e.name === 'CURRENT_DATE' && args.length === 0) return { code: `F.currentDate(${zone})`, type: typeOf('DATE') };
  if (e.name === 'DATE_FORMAT' && args.length === 2) return { code: `F.dateFormat(${wallClock(args[0]!, env)}, ${args[1]!.code})`, type: STRING };
  const builtin = SCALAR_FUNCTIONS[e.name];
  if (builtin === undefined) throw SqlError.at('SPW_ERR_SQL_UNKNOWN_FUNCTION', `unknown function ${e.name}`, env.text, e.at);
  if (args.length < builtin.min || args.length > builtin.max) {
    throw SqlError.at('SPW_ERR_SQL_TYPE', `${e.name} takes ${builtin.min === builtin.max ? builtin.min : `${builtin.min} to ${builtin.max}`} arguments, not ${args.length}`, env.text, e.at);
  }
  return { code: `F.${builtin.fn}(${argCode})`, type: resultType(e.name, args) };
}

function resultType(name: string, args: Compiled[]): SqlType {
  switch (name) {
    case 'MOD':
    case 'CHAR_LENGTH':
    case 'CHARACTER_LENGTH':
      return BIGINT;
    case 'ABS':
    case 'FLOOR':
    case 'CEIL':
    case 'CEILING':
    case 'ROUND':
    case 'COALESCE':
    case 'IFNULL':
    case 'NULLIF':
      return args[0]?.type ?? ANY;
    case 'POWER':
    case 'SQRT':
      return DOUBLE;
    case 'TO_TIMESTAMP_LTZ':
    case 'PROCTIME':
    case 'NOW':
    case 'CURRENT_TIMESTAMP':
      return typeOf('TIMESTAMP_LTZ');
    case 'TO_TIMESTAMP':
    case 'TIMESTAMP_LITERAL':
      return TIMESTAMP;
    case 'DATE_LITERAL':
      return typeOf('DATE');
    default:
      return STRING;
  }
}

/** The compiled function of one expression. `udfs` are the job's user functions, by index. */
export function toFunction(code: string, udfs: readonly ((...args: unknown[]) => unknown)[]): RowFn {
  return new Function('F', 'U', `"use strict"; return (r) => ${code};`)(FUNCTIONS, udfs) as RowFn;
}

/** The compiled function that builds a row of several expressions at once: one array literal, no loop. */
export function toRowFunction(codes: readonly string[], udfs: readonly ((...args: unknown[]) => unknown)[]): (row: unknown[]) => unknown[] {
  return toFunction(`[${codes.join(', ')}]`, udfs) as (row: unknown[]) => unknown[];
}

/** A predicate: true only where the expression is TRUE (not NULL). */
export function toPredicate(code: string, udfs: readonly ((...args: unknown[]) => unknown)[]): (row: unknown[]) => boolean {
  return toFunction(`(${code}) === true`, udfs) as (row: unknown[]) => boolean;
}

/** Whether an expression calls an aggregate function (outside an OVER). */
export function hasAggregate(e: Expr): boolean {
  let found = false;
  walk(e, (node) => {
    if (node.k === 'call' && AGGREGATES.has(node.name) && !node.over) found = true;
  });
  return found;
}

/** Visits every node of an expression, the root first. */
export function walk(e: Expr, visit: (node: Expr) => void): void {
  visit(e);
  const children: Expr[] = [];
  switch (e.k) {
    case 'un':
    case 'isnull':
    case 'cast':
    case 'extract':
      children.push(e.e);
      break;
    case 'bin':
      children.push(e.l, e.r);
      break;
    case 'between':
      children.push(e.e, e.lo, e.hi);
      break;
    case 'in':
      children.push(e.e, ...e.list);
      break;
    case 'like':
      children.push(e.e, e.pattern);
      break;
    case 'case':
      if (e.operand) children.push(e.operand);
      for (const w of e.whens) children.push(w.when, w.then);
      if (e.otherwise) children.push(e.otherwise);
      break;
    case 'call':
      children.push(...e.args);
      if (e.filter) children.push(e.filter);
      break;
    default:
      break;
  }
  for (const child of children) walk(child, visit);
}

/** The conjuncts of a predicate: `a AND (b AND c)` is [a, b, c]. */
export function conjuncts(e: Expr | undefined): Expr[] {
  if (e === undefined) return [];
  if (e.k === 'bin' && e.op === 'AND') return [...conjuncts(e.l), ...conjuncts(e.r)];
  return [e];
}

/** The AND of several predicates, or undefined for none. */
export function andOf(list: readonly Expr[]): Expr | undefined {
  return list.reduce<Expr | undefined>((acc, e) => (acc === undefined ? e : { k: 'bin', at: e.at, op: 'AND', l: acc, r: e }), undefined);
}

/** Every column an expression names. */
export function columnsOf(e: Expr): Extract<Expr, { k: 'col' }>[] {
  const out: Extract<Expr, { k: 'col' }>[] = [];
  walk(e, (node) => {
    if (node.k === 'col') out.push(node);
  });
  return out;
}

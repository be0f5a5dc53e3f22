/**
 * Plans a bound query into the engine's own stages, through the typed API (JobBuilder,
 * Stream): scans and their watermarks, filters and projections chained into one stage,
 * keyed exchanges where the key changes, event-time windows (the window operator, which
 * combines as it goes), keyed state for unwindowed aggregates, joins and Top-N, and the
 * sink. A relation's rows are arrays of its fields' values; an updating relation's records
 * are changes (Connectors.ts `Change`). Each step it takes is written to `explain`.
 */
import { JobBuilder } from '../../job/api/JobBuilder.js';
import type { Key } from '../../job/api/Exchangeable.js';
import type { Stream } from '../../job/api/Stream.js';
import { alignedShape, session, sliding, tumbling, type WindowAssigner } from '../../runtime/windows/WindowAssigner.js';
import type { Catalog, CatalogTable } from '../Catalog.js';
import type { Expr, FromItem, JoinType, OrderItem, Query, SelectItem, WindowFunction } from '../parser/Ast.js';
import { parseStatements } from '../parser/Parser.js';
import { predicateText, sourcePredicate } from '../SourcePredicate.js';
import { SqlError } from '../SqlError.js';
import { BIGINT, TIMESTAMP, typeOf } from '../Types.js';
import { toInstant, toLocal, windowAlignment } from '../TimeZone.js';
import { END_OF_INPUT, groupAggregate } from '../runtime/GroupAggregate.js';
import { cumulateAggregate } from '../runtime/CumulateAggregate.js';
import { regularJoin } from '../runtime/RegularJoin.js';
import { topN } from '../runtime/TopN.js';
import { windowTopN } from '../runtime/WindowTopN.js';
import { readBoundedRows } from './LookupSource.js';
import { accumulator, type AggregateCall, bindAggregate, compareValues } from './Aggregates.js';
import { type Change, isBoundedTable, physicalColumns, type Row, sourceRows } from './Connectors.js';
import { pruneView, usedInView } from './UsedColumns.js';
import { FUNCTIONS } from './Functions.js';
import { AGGREGATES, andOf, canonical, columnsOf, compile, conjuncts, type Env, type Field, hasAggregate, resolveColumn, toFunction, toPredicate, toRowFunction, walk } from './Expressions.js';

type UserFn = (...args: unknown[]) => unknown;
type AnyStream = Stream<Row>;

/** A window TVF not yet applied: its rows are the table's, and the window columns come last. */
interface PendingWindow {
  fn: WindowFunction;
  intervals: number[];
  /** The index of the DESCRIPTOR column. */
  time: number;
  at: number;
  /** The zone whose wall clock the windows follow: the session's, for a TIMESTAMP_LTZ time column. */
  zone: string | undefined;
}

/** Where a relation's window bounds are; `zone`: the zone whose wall clock they are in (the session's, for windows over a TIMESTAMP_LTZ). */
interface WindowProps {
  start: number;
  end: number;
  zone?: string | undefined;
}

/** A planned relation: its stream, its fields, and what the planner knows of its rows. */
export interface Rel {
  stream: AnyStream;
  fields: Field[];
  /** Records are changes (insert, update before/after, delete), not rows. */
  updating: boolean;
  bounded: boolean;
  /** Fields holding a window's start and end (the rows' timestamps are end - 1): a GROUP BY of both is a window aggregate. */
  windowProps?: WindowProps;
  /** A window TVF to apply: `fields` ends with window_start, window_end, window_time, not yet in the rows. */
  pending?: PendingWindow;
  /** The filter-and-projection the stream ends in, which the next one fuses into (one function, one row made). */
  calc?: Calc;
}

/** A chained filter-and-projection: its tests and its columns' code over the rows that enter it, and its function's slot. */
interface Calc {
  slot: { fn: (row: Row, emit: (row: Row) => void) => void };
  tests: string[];
  codes: string[];
}

export interface PlannerOptions {
  catalog: Catalog;
  job: JobBuilder;
  batch: boolean;
  udfs: UserFn[];
  scalarUdfs: Map<string, number>;
  aggregateUdfs: Map<string, number>;
  /** Column names the statement uses, lower-cased (a column reader reads only these); undefined for all. */
  used: Set<string> | undefined;
  /** The session's `table.local-time-zone`. */
  timeZone: string;
  explain: string[];
}

export class Planner {
  constructor(
    private readonly o: PlannerOptions,
    private readonly text: string,
  ) {}

  private env(fields: readonly Field[], computed?: Map<string, number>, canonicalFields?: readonly Field[]): Env {
    const env: Env = { fields, text: this.text, udfs: this.o.scalarUdfs, timeZone: this.o.timeZone };
    if (computed) env.computed = computed;
    if (canonicalFields) env.canonicalFields = canonicalFields;
    return env;
  }

  private note(line: string): void {
    this.o.explain.push(line);
  }

  plan(query: Query): Rel {
    if (query.k === 'union') return this.union(query);
    return this.select(query);
  }

  // SELECT.

  private select(q: Extract<Query, { k: 'select' }>): Rel {
    const topN = this.topNPattern(q);
    if (topN !== undefined) return this.finishSelect(q, topN.rel, topN.rest);
    const { rel, rest } = q.from === undefined ? { rel: this.values(), rest: conjuncts(q.where) } : this.from(q.from, conjuncts(q.where));
    return this.finishSelect(q, rel, rest);
  }

  private finishSelect(q: Extract<Query, { k: 'select' }>, input: Rel, where: Expr[]): Rel {
    const grouping = q.groupBy.length > 0 || q.items.some((i) => hasAggregate(i.e)) || (q.having !== undefined && hasAggregate(q.having));
    let rel: Rel;
    if (grouping) {
      const filtered = where.length > 0 ? this.filter(input, andOf(where)!) : input;
      rel = this.aggregate(q, filtered);
    } else {
      rel = this.project(input.pending ? this.applyWindow(input) : input, q.items, andOf(where));
      if (q.distinct) rel = this.distinct(rel);
    }
    if (q.orderBy.length > 0 || q.limit !== undefined) rel = this.sortLimit(rel, q.orderBy, q.limit);
    return rel;
  }

  /** `SELECT ...` without FROM: one row. */
  private values(): Rel {
    const stream = this.o.job.generate<Row>((subtask) => (subtask === 0 ? [[]] : [])) as AnyStream;
    return { stream, fields: [], updating: false, bounded: true };
  }

  // FROM.

  /** The relation of a FROM item, with the WHERE conjuncts it did not take (pushed into a side of a join, or used as its keys). */
  private from(item: FromItem, where: Expr[]): { rel: Rel; rest: Expr[] } {
    switch (item.k) {
      case 'table':
        if (item.systemTime !== undefined) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', 'FOR SYSTEM_TIME AS OF stands on the right of a JOIN', this.text, item.at);
        return { rel: this.table(item.name, item.alias ?? item.name, item.at, where), rest: where };
      case 'subquery':
        return { rel: requalify(this.plan(item.query), item.alias), rest: where };
      case 'tvf':
        return { rel: this.tvf(item), rest: where };
      case 'join':
        return this.join(item, where);
    }
  }

  private table(name: string, qualifier: string, at: number, where: readonly Expr[] = []): Rel {
    const view = this.o.catalog.view(name);
    if (view !== undefined) {
      const [parsed] = parseStatements(view.query);
      if (parsed === undefined || parsed.statement.k !== 'query') throw SqlError.at('SPW_ERR_SQL_TYPE', `view ${name} holds no query`, this.text, at);
      this.note(`View ${view.name}`);
      const query = pruneView(parsed.statement.query, this.o.used);
      return requalify(new Planner({ ...this.o, used: usedInView(this.o.used, query) }, view.query).plan(query), qualifier);
    }
    const table = this.o.catalog.table(name);
    if (table === undefined) throw SqlError.at('SPW_ERR_SQL_UNKNOWN_TABLE', `unknown table ${name}`, this.text, at);
    return this.scan(table, qualifier, where);
  }

  /** A table's rows: its source, its computed columns, its watermark. `where`: the conjuncts over it, for the source's predicate. */
  private scan(table: CatalogTable, qualifier: string, where: readonly Expr[]): Rel {
    const physical = physicalColumns(table);
    const computed = table.columns.filter((c) => c.expr !== undefined);
    let stream = sourceRows(this.o.job, table, this.o.used, computed.length) as AnyStream;
    const fields: Field[] = physical.map((c) => ({ name: c.name, qualifier, type: c.type }));
    if (computed.length > 0) {
      const planner = new Planner(this.o, table.text);
      const codes: string[] = [];
      for (const c of computed) {
        const env = planner.env(fields);
        const { code, type } = compile(c.expr!, env);
        codes.push(code);
        fields.push({ name: c.name, qualifier, type });
      }
      // Written into their slots (a source may have made them), not pushed.
      const extend = toFunction(`(${codes.map((code, i) => `r[${physical.length + i}] = ${code}`).join(', ')}, r)`, this.o.udfs) as (r: Row) => Row;
      stream = (stream as Stream<Row>).map(extend) as AnyStream;
    }
    let watermark = '';
    if (table.watermark !== undefined) {
      const { column, expr } = table.watermark;
      const index = resolveColumn([column], this.env(fields), 0).index;
      const delay = expr.k === 'bin' && expr.op === '-' && expr.r.k === 'interval' ? expr.r.ms : 0;
      stream = (stream as Stream<Row>).assignTimestamps((r) => r[index] as number, { maxOutOfOrderness: delay }) as AnyStream;
      watermark = `, watermark ${column} - ${delay} ms`;
    }
    const physicalEnv = this.env(fields.slice(0, physical.length));
    const predicate = sourcePredicate(where, (parts) => {
      if (parts.length > 2 || (parts.length === 2 && parts[0] !== qualifier)) return undefined;
      try {
        return fields[resolveColumn(parts.slice(-1), physicalEnv, 0).index]!.name;
      } catch {
        return undefined;
      }
    });
    const read = this.o.used === undefined ? '' : `, columns ${physical.filter((c) => this.o.used!.has(c.name.toLowerCase())).map((c) => c.name).join(', ')}`;
    this.note(`Scan ${table.name} (${connectorName(table)}${read}${predicate.length > 0 ? `, predicate ${predicateText(predicate)}` : ''}${watermark})`);
    return { stream, fields, updating: false, bounded: isBoundedTable(table) };
  }

  private tvf(item: Extract<FromItem, { k: 'tvf' }>): Rel {
    const base = this.from(item.table, []).rel;
    const input = base.pending ? this.applyWindow(base) : base;
    const time = resolveColumn([item.timeColumn], this.env(input.fields), item.at).index;
    const expected = { TUMBLE: 1, HOP: 2, CUMULATE: 2, SESSION: 1 }[item.fn];
    if (item.intervals.length !== expected) throw SqlError.at('SPW_ERR_SQL_TYPE', `${item.fn} takes ${expected} interval${expected > 1 ? 's' : ''}`, this.text, item.at);
    const qualifier = item.alias;
    const ltz = input.fields[time]!.type.name === 'TIMESTAMP_LTZ';
    const fields: Field[] = [
      ...input.fields.map((f) => (qualifier === undefined ? f : { ...f, qualifier })),
      { name: 'window_start', qualifier, type: TIMESTAMP },
      { name: 'window_end', qualifier, type: TIMESTAMP },
      { name: 'window_time', qualifier, type: ltz ? typeOf('TIMESTAMP_LTZ') : TIMESTAMP },
    ];
    return { ...input, fields, pending: { fn: item.fn, intervals: item.intervals, time, at: item.at, zone: this.windowZone(ltz) } };
  }

  /** Where windows over a time column follow a wall clock other than UTC's: a TIMESTAMP_LTZ column's, in the session's zone (as Flink's). */
  private windowZone(ltz: boolean): string | undefined {
    return ltz && this.o.timeZone !== 'UTC' ? this.o.timeZone : undefined;
  }

  /** Applies a pending window TVF as rows: each row once per window it falls in, with the window's columns. */
  private applyWindow(rel: Rel): Rel {
    const { fn, intervals, time, at, zone } = rel.pending!;
    if (fn === 'SESSION') throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', 'a SESSION window TVF stands only under a GROUP BY window_start, window_end', this.text, at);
    const windows = windowsOf(fn, intervals);
    this.note(`WindowTableFunction ${fn}(${intervals.map((i) => `${i} ms`).join(', ')})${zone === undefined ? '' : ` in ${zone}`}`);
    // Windows of a wall clock: its bounds are wall-clock times, window_time the instant before the end.
    const stream = (zone === undefined
      ? (rel.stream as Stream<Row>).flatMap<Row>((row, emit) => {
          for (const [start, end] of windows(row[time] as number)) emit([...row, start, end, end - 1]);
        })
      : (rel.stream as Stream<Row>).flatMap<Row>((row, emit) => {
          for (const [start, end] of windows(toLocal(row[time] as number, zone))) emit([...row, start, end, toInstant(end, zone) - 1]);
        })) as AnyStream;
    const n = rel.fields.length;
    return { stream, fields: rel.fields, updating: false, bounded: rel.bounded, windowProps: { start: n - 3, end: n - 2, zone } };
  }

  // Joins.

  private join(item: Extract<FromItem, { k: 'join' }>, where: Expr[]): { rel: Rel; rest: Expr[] } {
    if (item.right.k === 'table' && item.right.systemTime !== undefined) return this.lookupJoin(item, where);
    const inner = item.type === 'inner' || item.type === 'cross';
    // Conjuncts of one side go into it (an outer join's WHERE stays above it).
    const leftFields = this.fieldsOf(item.left);
    const rightFields = this.fieldsOf(item.right);
    const sideOf = (e: Expr): 'left' | 'right' | 'both' | 'none' => {
      const onLeft = resolvable(e, this.env(leftFields));
      const onRight = resolvable(e, this.env(rightFields));
      if (onLeft && !onRight) return 'left';
      if (onRight && !onLeft) return 'right';
      return resolvable(e, this.env([...leftFields, ...rightFields])) ? 'both' : 'none';
    };
    const pushed = inner ? where : [];
    const rest = inner ? [] : [...where];
    const leftWhere: Expr[] = [];
    const rightWhere: Expr[] = [];
    const joinConds: Expr[] = [...conjuncts(item.on)];
    for (const e of pushed) {
      const side = sideOf(e);
      if (side === 'left') leftWhere.push(e);
      else if (side === 'right') rightWhere.push(e);
      else if (side === 'both') joinConds.push(e);
      else rest.push(e);
    }
    const left = this.from(item.left, leftWhere);
    const right = this.from(item.right, rightWhere);
    const l = this.filtered(left.rel, left.rest);
    const r = this.filtered(right.rel, right.rest);
    const fields = [...l.fields, ...r.fields];
    const leftKeys: Expr[] = [];
    const rightKeys: Expr[] = [];
    const residual: Expr[] = [];
    for (const e of joinConds) {
      if (e.k === 'bin' && e.op === '=') {
        const a = sideOf(e.l);
        const b = sideOf(e.r);
        if (a === 'left' && b === 'right') {
          leftKeys.push(e.l);
          rightKeys.push(e.r);
          continue;
        }
        if (a === 'right' && b === 'left') {
          leftKeys.push(e.r);
          rightKeys.push(e.l);
          continue;
        }
      }
      residual.push(e);
    }
    if (l.updating || r.updating) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', 'a join of an updating result (an unwindowed GROUP BY or Top-N) is not planned yet', this.text, item.at);
    if (!inner && !this.o.batch) {
      throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', `a streaming ${item.type.toUpperCase()} JOIN gives an updating result, not planned yet: use an inner join, or SET 'execution.runtime-mode' = 'batch'`, this.text, item.at);
    }
    const leftKey = this.keyFunction(leftKeys, this.env(l.fields));
    const rightKey = this.keyFunction(rightKeys, this.env(r.fields));
    const residualFn = residual.length === 0 ? undefined : toPredicate(compile(andOf(residual)!, this.env(fields)).code, this.o.udfs);
    const fn = regularJoin(item.type === 'cross' ? 'inner' : (item.type as JoinType), [l.fields.length, r.fields.length], residualFn);
    const stream = (l.stream as Stream<Row>)
      .keyBy(leftKey)
      .connect((r.stream as Stream<Row>).keyBy(rightKey))
      .process<Row>(fn) as AnyStream;
    this.note(`Join ${item.type} on ${leftKeys.length} key${leftKeys.length === 1 ? '' : 's'}${residual.length > 0 ? ' with a residual condition' : ''} (keyed state of both sides)`);
    return { rel: { stream, fields, updating: false, bounded: l.bounded && r.bounded }, rest };
  }

  /** `JOIN t FOR SYSTEM_TIME AS OF ...`: each task reads the bounded table once, into a hash map by the key, and probes it. */
  private lookupJoin(item: Extract<FromItem, { k: 'join' }>, where: Expr[]): { rel: Rel; rest: Expr[] } {
    const rightItem = item.right as Extract<FromItem, { k: 'table' }>;
    const table = this.o.catalog.table(rightItem.name);
    if (table === undefined) throw SqlError.at('SPW_ERR_SQL_UNKNOWN_TABLE', `unknown table ${rightItem.name}`, this.text, rightItem.at);
    const left = this.from(item.left, []);
    const l = this.filtered(left.rel, left.rest);
    const qualifier = rightItem.alias ?? rightItem.name;
    const columns = physicalColumns(table);
    const rightFields: Field[] = columns.map((c) => ({ name: c.name, qualifier, type: c.type }));
    const fields = [...l.fields, ...rightFields];
    const leftKeys: Expr[] = [];
    const rightKeys: string[] = [];
    const residual: Expr[] = [];
    for (const e of conjuncts(item.on)) {
      if (e.k === 'bin' && e.op === '=' && e.r.k === 'col' && resolvable(e.r, this.env(rightFields)) && resolvable(e.l, this.env(l.fields))) {
        leftKeys.push(e.l);
        rightKeys.push(rightFields[resolveColumn(e.r.parts, this.env(rightFields), e.r.at).index]!.name);
      } else if (e.k === 'bin' && e.op === '=' && e.l.k === 'col' && resolvable(e.l, this.env(rightFields)) && resolvable(e.r, this.env(l.fields))) {
        leftKeys.push(e.r);
        rightKeys.push(rightFields[resolveColumn(e.l.parts, this.env(rightFields), e.l.at).index]!.name);
      } else residual.push(e);
    }
    if (leftKeys.length === 0) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', 'a lookup join needs an equality of the looked-up table\'s columns', this.text, item.at);
    const probe = this.keyFunction(leftKeys, this.env(l.fields));
    const keyIndexes = rightKeys.map((k) => columns.findIndex((c) => c.name === k));
    const residualFn = residual.length === 0 ? undefined : toPredicate(compile(andOf(residual)!, this.env(fields)).code, this.o.udfs);
    const loadTable = lookupTable(table, keyIndexes);
    const outer = item.type === 'left';
    const width = columns.length;
    const stream = (l.stream as Stream<Row>).flatMap<Row>((row, emit) => {
      const matches = loadTable().get(JSON.stringify(probe(row)));
      let matched = false;
      for (const other of matches ?? []) {
        const joined = [...row, ...other];
        if (residualFn !== undefined && !residualFn(joined)) continue;
        matched = true;
        emit(joined);
      }
      if (!matched && outer) emit([...row, ...new Array<null>(width).fill(null)]);
    }) as AnyStream;
    this.note(`LookupJoin ${table.name} on ${rightKeys.join(', ')} (the table in memory in each task)`);
    return { rel: { stream, fields, updating: false, bounded: l.bounded }, rest: where };
  }

  /** The fields a FROM item will have: planned on a scratch job whose stages are dropped. */
  private fieldsOf(item: FromItem): Field[] {
    const scratch = new Planner({ ...this.o, job: new JobBuilder('scratch'), explain: [] }, this.text);
    return scratch.from(item, []).rel.fields;
  }

  private filtered(rel: Rel, where: Expr[]): Rel {
    const applied = rel.pending ? this.applyWindow(rel) : rel;
    return where.length === 0 ? applied : this.filter(applied, andOf(where)!);
  }

  private filter(rel: Rel, predicate: Expr): Rel {
    const input = rel.pending ? this.applyWindow(rel) : rel;
    const code = compile(predicate, this.env(input.fields)).code;
    if (!input.updating) return { ...input, ...this.calc(input, input.fields.map((_, i) => `r[${i}]`), code) };
    const test = toPredicate(code, this.o.udfs);
    this.note('Calc (filter)');
    const stream = (input.stream as unknown as Stream<Change>).filter((c) => test(c.row));
    return { ...input, stream: stream as unknown as AnyStream, calc: undefined };
  }

  /** The key of a keyed exchange: one value, or an array of several (compared by their JSON). */
  private keyFunction(keys: readonly Expr[], env: Env): (row: Row) => Key {
    if (keys.length === 0) return () => 0;
    const codes = keys.map((k) => compile(k, env).code);
    // Several keys are one array key: the engine keys its state and its exchange by the array's JSON.
    return (keys.length === 1 ? toFunction(codes[0]!, this.o.udfs) : toRowFunction(codes, this.o.udfs)) as unknown as (row: Row) => Key;
  }

  // Projection.

  private project(rel: Rel, items: readonly SelectItem[], where: Expr | undefined, computed?: Map<string, number>, canonicalFields?: readonly Field[]): Rel {
    const env = this.env(rel.fields, computed, canonicalFields);
    const codes: string[] = [];
    const fields: Field[] = [];
    let windowStart: number | undefined;
    let windowEnd: number | undefined;
    items.forEach((item, n) => {
      if (item.e.k === 'star') {
        const table = item.e.table;
        rel.fields.forEach((f, i) => {
          if ((table !== undefined && f.qualifier !== table) || f.hidden) return;
          if (i === rel.windowProps?.start) windowStart = fields.length;
          if (i === rel.windowProps?.end) windowEnd = fields.length;
          codes.push(`r[${i}]`);
          fields.push({ name: f.name, type: f.type });
        });
        return;
      }
      const { code, type } = compile(item.e, env);
      const direct = /^r\[(\d+)\]$/.exec(code);
      if (direct && Number(direct[1]) === rel.windowProps?.start) windowStart = fields.length;
      if (direct && Number(direct[1]) === rel.windowProps?.end) windowEnd = fields.length;
      codes.push(code);
      fields.push({ name: item.alias ?? implicitName(item.e, n), type });
    });
    const identity = where === undefined && codes.length === rel.fields.length && codes.every((c, i) => c === `r[${i}]`);
    const windowProps = windowStart !== undefined && windowEnd !== undefined ? { start: windowStart, end: windowEnd, zone: rel.windowProps?.zone } : undefined;
    if (identity) return { ...rel, fields, windowProps };
    const testCode = where === undefined ? undefined : compile(where, env).code;
    if (!rel.updating) return { ...this.calc(rel, codes, testCode), fields, updating: false, bounded: rel.bounded, windowProps };
    const shape = toRowFunction(codes, this.o.udfs) as unknown as (row: Row) => Row;
    const test = testCode === undefined ? undefined : toPredicate(testCode, this.o.udfs);
    this.note(`Calc (${test ? 'filter, ' : ''}projection of ${codes.length})`);
    const stream = (rel.stream as unknown as Stream<Change>).flatMap<Change>((c, emit) => {
      if (test === undefined || test(c.row)) emit({ op: c.op, row: shape(c.row) });
    }) as unknown as AnyStream;
    return { stream, fields, updating: true, bounded: rel.bounded, windowProps };
  }

  /**
   * A filter-and-projection of an append-only relation as one chained function: fused into
   * the one its stream ends in, if any (its columns' code put in place of the references to
   * them), else a new flatMap. Returns the stream and the calc the next one may fuse into.
   */
  private calc(rel: Rel, codes: string[], test: string | undefined): { stream: AnyStream; calc: Calc } {
    const inner = rel.calc;
    const inline = (code: string): string => (inner === undefined ? code : code.replace(/\br\[(\d+)\]/g, (_, i: string) => `(${inner.codes[Number(i)]!})`));
    const tests = [...(inner?.tests ?? []), ...(test === undefined ? [] : [inline(test)])];
    const fused = codes.map(inline);
    const body = `${tests.map((t) => `if ((${t}) !== true) return; `).join('')}emit([${fused.join(', ')}]);`;
    const fn = new Function('F', 'U', `"use strict"; return (r, emit) => { ${body} };`)(FUNCTIONS, this.o.udfs) as Calc['slot']['fn'];
    if (inner !== undefined) {
      inner.slot.fn = fn;
      this.note(`Calc (${test ? 'filter, ' : ''}projection of ${codes.length}, fused into the one before)`);
      return { stream: rel.stream, calc: { slot: inner.slot, tests, codes: fused } };
    }
    const slot = { fn };
    this.note(`Calc (${test ? 'filter, ' : ''}projection of ${codes.length})`);
    const stream = (rel.stream as Stream<Row>).flatMap<Row>((row, emit) => slot.fn(row, emit));
    return { stream, calc: { slot, tests, codes: fused } };
  }

  // Aggregation.

  private aggregate(q: Extract<Query, { k: 'select' }>, input: Rel): Rel {
    if (q.items.some((i) => i.e.k === 'star')) throw SqlError.at('SPW_ERR_SQL_TYPE', 'SELECT * of a query that groups', this.text, q.at);
    const inputEnv = this.env(input.fields);
    const n = input.fields.length;
    // Which GROUP BY expressions are a window's bounds (a TVF's, a cascaded window's, or a group window function's).
    let assigner: WindowAssigner | undefined;
    let cascade = false;
    const keys: Expr[] = [];
    const computed = new Map<string, number>();
    const windowSlots: Expr[][] = [[], []];
    let legacy: Extract<Expr, { k: 'call' }> | undefined;
    let zone: string | undefined;
    for (const g of q.groupBy) {
      const index = g.k === 'col' ? resolveColumn(g.parts, inputEnv, g.at).index : -1;
      if (input.pending && index === n - 3) windowSlots[0]!.push(g);
      else if (input.pending && index === n - 2) windowSlots[1]!.push(g);
      else if (g.k === 'call' && (g.name === 'TUMBLE' || g.name === 'HOP' || g.name === 'SESSION') && !g.over) legacy = g;
      else keys.push(g);
    }
    if (input.pending && (windowSlots[0]!.length > 0 || windowSlots[1]!.length > 0)) {
      zone = input.pending.zone;
      assigner = this.assigner(input.pending.fn, input.pending.intervals, input.pending.at, zone);
      if (input.pending.fn === 'SESSION' && keys.length === 0) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', 'a SESSION window needs its PARTITION BY keys in the GROUP BY', this.text, q.at);
    } else if (legacy !== undefined) {
      const intervals = legacy.args.slice(1).map((a) => (a.k === 'interval' ? a.ms : Number.NaN));
      if (intervals.some(Number.isNaN)) throw SqlError.at('SPW_ERR_SQL_TYPE', `${legacy.name} takes a time column and intervals`, this.text, legacy.at);
      const time = legacy.args[0];
      zone = this.windowZone(time !== undefined && compile(time, inputEnv).type.name === 'TIMESTAMP_LTZ');
      assigner = this.assigner(legacy.name as WindowFunction, intervals, legacy.at, zone);
      windowSlots[0]!.push(legacy);
    } else if (input.windowProps) {
      const wp = input.windowProps;
      const grouped = new Set(keys.map((k) => (k.k === 'col' ? resolveColumn(k.parts, inputEnv, k.at).index : -1)));
      cascade = grouped.has(wp.start) && grouped.has(wp.end);
    }
    const source = input.pending && assigner === undefined ? this.applyWindow(input) : input;
    keys.forEach((k, i) => computed.set(canonical(k, inputEnv), i));
    const windowed = assigner !== undefined;
    const k = keys.length;
    if (windowed) {
      for (const e of windowSlots[0]!) computed.set(canonical(e, inputEnv), k);
      for (const e of windowSlots[1]!) computed.set(canonical(e, inputEnv), k + 1);
      if (legacy !== undefined) {
        const args = legacy.args;
        for (const [suffix, slot] of [['_START', k], ['_END', k + 1], ['_ROWTIME', k + 1]] as const) {
          const call: Expr = { k: 'call', at: 0, name: `${legacy.name}${suffix}`, args, distinct: false, star: false };
          computed.set(canonical(call, inputEnv), slot);
        }
      }
    }
    // The aggregate calls of the SELECT list and HAVING, each once.
    const calls: AggregateCall[] = [];
    const callKeys: string[] = [];
    const visit = (e: Expr): void =>
      walk(e, (node) => {
        if (node.k !== 'call' || node.over || !(AGGREGATES.has(node.name) || this.o.aggregateUdfs.has(node.name))) return;
        const key = canonical(node, inputEnv);
        if (callKeys.includes(key)) return;
        callKeys.push(key);
        calls.push(bindAggregate(node, inputEnv, this.o.aggregateUdfs));
      });
    q.items.forEach((i) => visit(i.e));
    if (q.having) visit(q.having);
    const base = k + (windowed ? 2 : 0);
    callKeys.forEach((key, j) => computed.set(key, base + j));
    const fields: Field[] = [
      ...keys.map((e, i): Field => {
        const { type } = compile(e, inputEnv);
        if (e.k === 'col') {
          const f = input.fields[resolveColumn(e.parts, inputEnv, e.at).index]!;
          return { name: f.name, qualifier: f.qualifier, type };
        }
        return { name: `$key${i}`, type };
      }),
      ...(windowed ? [{ name: 'window_start', type: TIMESTAMP }, { name: 'window_end', type: TIMESTAMP }] : []),
      ...calls.map((c, j): Field => ({ name: `$agg${j}`, type: c.type })),
    ];
    const acc = accumulator(calls, this.o.udfs, source.updating);
    const keyFn = this.keyFunction(keys, this.env(source.fields));
    const keyValues = k === 0 ? (): unknown[] => [] : k === 1 ? (key: unknown): unknown[] => [key] : (key: unknown): unknown[] => key as unknown[];
    let stream: AnyStream;
    let updating = false;
    let windowProps: Rel['windowProps'];
    if (windowed || cascade) {
      if (source.updating) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', 'a window aggregate of an updating result', this.text, q.at);
      const windowAggregate = { create: acc.create, add: acc.add, merge: acc.merge, result: (a: unknown[]) => a };
      const w = assigner ?? tumbling(1);
      // A window of a zone's wall clock is shown by its wall-clock bounds.
      const wall = zone === undefined ? (ms: number): number => ms : (ms: number): number => toLocal(ms, zone);
      if (input.pending?.fn === 'CUMULATE' && windowed) {
        const [step, size] = input.pending.intervals as [number, number];
        const fn = cumulateAggregate(acc, keyValues, { step, size, offset: alignedShape(w).offset, time: input.pending.time, wall });
        stream = (source.stream as Stream<Row>).keyBy(keyFn).process<Row>(fn) as AnyStream;
      } else if (k === 0) {
        stream = (source.stream as Stream<Row>).windowAll(w).aggregate(windowAggregate).map((r) => [wall(r.start), wall(r.end), ...acc.result(r.value)]) as AnyStream;
      } else {
        stream = (source.stream as Stream<Row>)
          .keyBy(keyFn)
          .window(w)
          .aggregate(windowAggregate)
          .map((r) => (windowed ? [...keyValues(r.key), wall(r.start), wall(r.end), ...acc.result(r.value)] : [...keyValues(r.key), ...acc.result(r.value)])) as AnyStream;
      }
      if (windowed) windowProps = { start: k, end: k + 1, zone };
      else {
        const wp = input.windowProps!;
        const slotOf = (index: number): number => keys.findIndex((e) => e.k === 'col' && resolveColumn(e.parts, inputEnv, e.at).index === index);
        windowProps = { start: slotOf(wp.start), end: slotOf(wp.end), zone: wp.zone };
      }
      const windows = input.pending?.fn === 'CUMULATE' && windowed ? `CUMULATE(${input.pending.intervals.map((i) => `${i} ms`).join(', ')}) by slices` : assigner ? describeAssigner(assigner) : 'of the input windows';
      this.note(`WindowAggregate ${windows} by ${k} key${k === 1 ? '' : 's'}, ${calls.length} aggregate${calls.length === 1 ? '' : 's'} (incremental, keyed window state)`);
    } else if (this.o.batch && !source.updating) {
      stream = (source.stream as Stream<Row>)
        .keyBy(keyFn)
        .combine<Row>({ create: (r) => acc.add(acc.create(), r) as Row, merge: acc.add as (a: Row, r: Row) => Row, mergeCombiners: acc.merge as (a: Row, b: Row) => Row })
        .map(([key, a]): Row => [...keyValues(key), ...acc.result(a)] as Row);
      this.note(`HashAggregate by ${k} key${k === 1 ? '' : 's'}, ${calls.length} aggregate${calls.length === 1 ? '' : 's'} (map-side combine, then a keyed exchange)`);
    } else {
      const fn = groupAggregate(acc, keyValues, { updatingInput: source.updating, batch: this.o.batch });
      const keyed = source.updating ? (source.stream as unknown as Stream<Row>).keyBy((c) => keyFn((c as unknown as Change).row)) : (source.stream as Stream<Row>).keyBy(keyFn);
      stream = (keyed as ReturnType<Stream<Row>['keyBy']>).process<unknown>(fn as never) as AnyStream;
      updating = !this.o.batch;
      this.note(`GroupAggregate by ${k} key${k === 1 ? '' : 's'}, ${calls.length} aggregate${calls.length === 1 ? '' : 's'} (keyed state${updating ? ', an updating result' : ', given at the end'})`);
    }
    const grouped: Rel = { stream, fields, updating, bounded: source.bounded, windowProps };
    return this.project(grouped, q.items, q.having, computed, input.fields);
  }

  /** The engine's assigner of a window function; `zone`: the wall clock its windows align to. */
  private assigner(fn: WindowFunction, intervals: number[], at: number, zone: string | undefined): WindowAssigner {
    const offset = (step: number): number => {
      if (zone === undefined) return 0;
      const alignment = windowAlignment(zone, step);
      if (alignment === undefined) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', `windows of ${step} ms over a TIMESTAMP_LTZ in ${zone}, whose offset changes (summer time) by a part of them: use windows that divide an hour, or a zone of one offset`, this.text, at);
      return -alignment;
    };
    switch (fn) {
      case 'TUMBLE':
        return tumbling(intervals[0]!, offset(intervals[0]!));
      case 'HOP':
        // HOP(TABLE t, DESCRIPTOR(ts), slide, size); the group window HOP(ts, slide, size) too.
        return sliding(intervals[1]!, intervals[0]!, offset(intervals[0]!));
      case 'SESSION':
        return session(intervals[0]!);
      case 'CUMULATE': {
        // CUMULATE(TABLE t, DESCRIPTOR(ts), step, size): the outer windows, which its steps cut (CumulateAggregate.ts).
        const [step, size] = intervals as [number, number];
        if (size % step !== 0) throw SqlError.at('SPW_ERR_SQL_TYPE', 'a CUMULATE window\'s size must be a multiple of its step', this.text, at);
        return tumbling(size, offset(size));
      }
    }
  }

  private distinct(rel: Rel): Rel {
    const keyFn = toRowFunction(rel.fields.map((_, i) => `r[${i}]`), this.o.udfs) as unknown as (row: Row) => Key;
    const acc = accumulator([], this.o.udfs, rel.updating);
    const fn = groupAggregate(acc, (key) => key as unknown[], { updatingInput: rel.updating, batch: this.o.batch });
    const keyed = rel.updating ? rel.stream.keyBy((c) => keyFn((c as unknown as Change).row)) : rel.stream.keyBy(keyFn);
    this.note('Distinct (keyed state)');
    return { ...rel, stream: (keyed as ReturnType<Stream<Row>['keyBy']>).process<unknown>(fn as never) as AnyStream, updating: !this.o.batch, calc: undefined, windowProps: undefined };
  }

  // Top-N.

  /**
   * `SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (PARTITION BY p ORDER BY o) AS rn FROM t) WHERE rn <= N`:
   * the inner query's rows, the first N of each partition in their order, with the rank where it is used.
   */
  private topNPattern(q: Extract<Query, { k: 'select' }>): { rel: Rel; rest: Expr[] } | undefined {
    if (q.from?.k !== 'subquery' || q.from.query.k !== 'select') return undefined;
    const inner = q.from.query;
    const rankAt = inner.items.findIndex((i) => i.e.k === 'call' && i.e.name === 'ROW_NUMBER' && i.e.over !== undefined);
    if (rankAt < 0) return undefined;
    const rankItem = inner.items[rankAt]!;
    const rankName = rankItem.alias ?? `EXPR$${rankAt}`;
    const over = (rankItem.e as Extract<Expr, { k: 'call' }>).over!;
    let limit: number | undefined;
    const rest: Expr[] = [];
    for (const e of conjuncts(q.where)) {
      const bound = rankBound(e, rankName);
      if (bound !== undefined && limit === undefined) limit = bound;
      else rest.push(e);
    }
    if (limit === undefined) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', `ROW_NUMBER() stands only in a Top-N: WHERE ${rankName} <= N`, this.text, rankItem.e.at);
    if (inner.groupBy.length > 0 || inner.items.some((i) => hasAggregate(i.e))) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', 'a Top-N over a query that groups', this.text, inner.at);
    const from = inner.from === undefined ? { rel: this.values(), rest: [] } : this.from(inner.from, conjuncts(inner.where));
    const base = this.filtered(from.rel, from.rest);
    if (base.updating) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', 'a Top-N of an updating result', this.text, inner.at);
    const env = this.env(base.fields);
    const partition = this.keyFunction(over.partitionBy, env);
    const compare = comparator(over.orderBy, env, this.o.udfs);
    const withRank = q.items.some((i) => i.e.k === 'star' || columnsOf(i.e).some((c) => c.parts[c.parts.length - 1] === rankName)) || rest.some((e) => columnsOf(e).some((c) => c.parts[c.parts.length - 1] === rankName));
    const window = this.windowPartition(base, over.partitionBy);
    let stream: AnyStream;
    let updating: boolean;
    if (window !== undefined) {
      const { end, zone } = window;
      const windowEnd = zone === undefined ? (row: Row): number => row[end] as number : (row: Row): number => toInstant(row[end] as number, zone);
      stream = (base.stream as Stream<Row>).keyBy(partition).process<Row>(windowTopN(limit, compare, { withRank, windowEnd })) as AnyStream;
      updating = false;
      this.note(`WindowTop-${limit} by ${over.partitionBy.length} keys (keyed state, given as each window ends)`);
    } else {
      stream = (base.stream as Stream<Row>).keyBy(partition).process<unknown>(topN(limit, compare, { withRank, batch: this.o.batch })) as AnyStream;
      updating = !this.o.batch;
      this.note(`${limit === 1 ? 'Deduplicate' : `Top-${limit}`} by ${over.partitionBy.length} key${over.partitionBy.length === 1 ? '' : 's'} (keyed state${updating ? ', an updating result' : ''})`);
    }
    // The inner query's projection, over the base rows and their rank.
    const ranked: Rel = { stream, fields: [...base.fields, { name: rankName, type: BIGINT, hidden: true }], updating, bounded: base.bounded };
    const items = inner.items.map((item, i): SelectItem => (i === rankAt ? { e: { k: 'col', at: item.e.at, parts: [rankName] }, alias: rankName } : item));
    const projected = withRank ? this.project(ranked, items, undefined) : this.project({ ...ranked, fields: base.fields }, items.filter((_, i) => i !== rankAt), undefined);
    return { rel: requalify(projected, q.from.alias), rest };
  }

  /** The window of a Top-N that partitions by both of its input's window bounds (a window Top-N), else undefined. */
  private windowPartition(base: Rel, partitionBy: readonly Expr[]): WindowProps | undefined {
    const wp = base.windowProps;
    if (wp === undefined) return undefined;
    const env = this.env(base.fields);
    const indexes = partitionBy.map((e) => (e.k === 'col' ? resolveColumn(e.parts, env, e.at).index : -1));
    return indexes.includes(wp.start) && indexes.includes(wp.end) ? wp : undefined;
  }

  // ORDER BY, LIMIT, UNION ALL.

  private sortLimit(rel: Rel, orderBy: readonly OrderItem[], limit: number | undefined): Rel {
    if (!this.o.batch || !rel.bounded || rel.updating) {
      throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', "ORDER BY and LIMIT of an unbounded or updating result: SET 'execution.runtime-mode' = 'batch' over bounded tables", this.text, orderBy[0]?.e.at ?? 0);
    }
    const compare = orderBy.length === 0 ? () => 0 : comparator(orderBy, this.env(rel.fields), this.o.udfs, true);
    const stream = (rel.stream as Stream<Row>).keyBy(() => 0).process<Row>({
      processElement(row, ctx) {
        if (ctx.state.list<Row>('rows').get().length === 0) ctx.timers.registerEventTime(END_OF_INPUT);
        ctx.state.list<Row>('rows').add(row);
      },
      onTimer(_time, ctx, emit) {
        const rows = [...ctx.state.list<Row>('rows').get()].sort(compare);
        for (const row of limit === undefined ? rows : rows.slice(0, limit)) emit(row);
      },
    }) as AnyStream;
    this.note(`Sort${limit === undefined ? '' : ` and limit ${limit}`} (one task)`);
    return { ...rel, stream, calc: undefined };
  }

  /** `UNION ALL` merges both inputs; `UNION` is the distinct rows of that (an updating result in streaming mode, as Flink's). */
  private union(q: Extract<Query, { k: 'union' }>): Rel {
    let l = this.materialized(this.plan(q.left));
    let r = this.materialized(this.plan(q.right));
    if (l.fields.length !== r.fields.length) throw SqlError.at('SPW_ERR_SQL_TYPE', `UNION of ${l.fields.length} and ${r.fields.length} columns`, this.text, q.at);
    // Beside an updating input, an append-only one's rows are inserts.
    if (l.updating && !r.updating) r = asInserts(r);
    if (r.updating && !l.updating) l = asInserts(l);
    const first = (row: Row): Key => (typeof row[0] === 'object' ? JSON.stringify(row[0]) : row[0]) ?? 0;
    const key = l.updating ? (c: Row): Key => first((c as unknown as Change).row) : first;
    const pass = (record: unknown, _ctx: unknown, emit: (r: unknown) => void): void => emit(record);
    const stream = (l.stream as Stream<Row>).keyBy(key).connect((r.stream as Stream<Row>).keyBy(key)).process<unknown>({ processElement1: pass, processElement2: pass }) as AnyStream;
    this.note('Union all');
    let rel: Rel = { stream, fields: l.fields.map((f) => ({ name: f.name, type: f.type })), updating: l.updating, bounded: l.bounded && r.bounded };
    if (!q.all) rel = this.distinct(rel);
    if (q.orderBy.length > 0 || q.limit !== undefined) rel = this.sortLimit(rel, q.orderBy, q.limit);
    return rel;
  }

  /** The relation with a pending window applied. */
  materialized(rel: Rel): Rel {
    return rel.pending ? this.applyWindow(rel) : rel;
  }
}

/** An append-only relation as an updating one: each row an insert. */
function asInserts(rel: Rel): Rel {
  const stream = rel.stream.map((row) => ({ op: '+I', row }) satisfies Change) as unknown as AnyStream;
  return { ...rel, stream, updating: true, calc: undefined };
}

/** A relation whose fields are qualified by `alias` (a subquery's or a view's name). */
function requalify(rel: Rel, alias: string | undefined): Rel {
  if (alias === undefined) return { ...rel, fields: rel.fields.map((f) => ({ name: f.name, type: f.type })) };
  return { ...rel, fields: rel.fields.map((f) => ({ ...f, qualifier: alias })) };
}

/** The name Flink gives a SELECT item without an alias: a column's own name, else EXPR$n. */
function implicitName(e: Expr, n: number): string {
  if (e.k === 'col') return e.parts[e.parts.length - 1]!;
  return `EXPR$${n}`;
}

/** Whether every column of `e` resolves in `env`. */
function resolvable(e: Expr, env: Env): boolean {
  try {
    for (const c of columnsOf(e)) resolveColumn(c.parts, env, c.at);
    return true;
  } catch {
    return false;
  }
}

/** N of `rn <= N`, `rn < N`, `rn = 1` (or the same turned round), for the rank column. */
function rankBound(e: Expr, rank: string): number | undefined {
  if (e.k !== 'bin') return undefined;
  const isRank = (x: Expr): boolean => x.k === 'col' && x.parts[x.parts.length - 1] === rank;
  const num = (x: Expr): number | undefined => (x.k === 'lit' && typeof x.v === 'number' ? x.v : undefined);
  if (isRank(e.l) && num(e.r) !== undefined) {
    const n = num(e.r)!;
    return e.op === '<=' ? n : e.op === '<' ? n - 1 : e.op === '=' && n === 1 ? 1 : undefined;
  }
  if (isRank(e.r) && num(e.l) !== undefined) {
    const n = num(e.l)!;
    return e.op === '>=' ? n : e.op === '>' ? n - 1 : e.op === '=' && n === 1 ? 1 : undefined;
  }
  return undefined;
}

/** The order of ORDER BY items: nulls first ascending, last descending, as Flink's. */
function comparator(orderBy: readonly OrderItem[], env: Env, udfs: UserFn[], positional = false): (a: Row, b: Row) => number {
  const keys = orderBy.map((o) => {
    const fn = positional && o.e.k === 'lit' && typeof o.e.v === 'number' ? ((r: Row) => r[(o.e as { v: number }).v - 1]) : toFunction(compile(o.e, env).code, udfs);
    return { fn, sign: o.desc ? -1 : 1 };
  });
  return (a, b) => {
    for (const { fn, sign } of keys) {
      const x = fn(a);
      const y = fn(b);
      if (x === y) continue;
      if (x === null || x === undefined) return -sign;
      if (y === null || y === undefined) return sign;
      const c = compareValues(x, y);
      if (c !== 0) return sign * c;
    }
    return 0;
  };
}

/** The windows a timestamp falls in, [start, end), of a TUMBLE, HOP or CUMULATE. */
function windowsOf(fn: WindowFunction, intervals: number[]): (t: number) => [number, number][] {
  if (fn === 'TUMBLE') {
    const size = intervals[0]!;
    return (t) => {
      const start = t - (((t % size) + size) % size);
      return [[start, start + size]];
    };
  }
  if (fn === 'HOP') {
    const [slide, size] = intervals as [number, number];
    return (t) => {
      const out: [number, number][] = [];
      const last = t - (((t % slide) + slide) % slide);
      for (let start = last; start > t - size; start -= slide) out.push([start, start + size]);
      return out.reverse();
    };
  }
  const [step, size] = intervals as [number, number];
  return (t) => {
    const start = t - (((t % size) + size) % size);
    const out: [number, number][] = [];
    for (let end = start + step; end <= start + size; end += step) if (t < end) out.push([start, end]);
    return out;
  };
}

function describeAssigner(w: WindowAssigner): string {
  return JSON.stringify(w);
}

function connectorName(table: CatalogTable): string {
  return table.options.connector ?? table.options['connector.type'] ?? '?';
}

/** The rows of a bounded table by the JSON of their key columns, read once per task when first probed. */
function lookupTable(table: CatalogTable, keyIndexes: number[]): () => Map<string, Row[]> {
  let map: Map<string, Row[]> | undefined;
  return () => {
    if (map !== undefined) return map;
    map = new Map();
    for (const row of readBoundedRows(table)) {
      const key = JSON.stringify(keyIndexes.length === 1 ? row[keyIndexes[0]!] : keyIndexes.map((i) => row[i]));
      const list = map.get(key);
      if (list) list.push(row);
      else map.set(key, [row]);
    }
    return map;
  };
}

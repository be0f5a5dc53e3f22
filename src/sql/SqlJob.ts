/**
 * A SQL statement as a job: the built-in job `sql`, whose params carry the statement's text,
 * the catalogue's snapshot and the session's settings. Every process that loads the job (the
 * JobManager, each task) parses and plans it again from the same params, so every task
 * compiles the same expressions into its own functions, once.
 */
import { JobBuilder } from '../job/api/JobBuilder.js';
import type { JobDefinition } from '../job/JobDefinition.js';
import { Catalog, type CatalogFunction, type CatalogSnapshot } from './Catalog.js';
import type { InsertStatement, Query, Statement } from './parser/Ast.js';
import { parseStatements } from './parser/Parser.js';
import { type Change, physicalColumns, type Row, sinkTakesUpdates, writeSink } from './planner/Connectors.js';
import { Planner, type Rel } from './planner/Planner.js';
import { usedColumns } from './planner/UsedColumns.js';
import { SqlError } from './SqlError.js';
import { externalValue } from './Types.js';
import { DEFAULT_TIME_ZONE } from './TimeZone.js';
import type { Stream } from '../job/api/Stream.js';

/** The built-in job's name. */
export const SQL_JOB = 'sql';

export interface SqlJobParams {
  /** One INSERT, SELECT or EXECUTE STATEMENT SET, as written. */
  sql: string;
  catalog: CatalogSnapshot;
  settings: Record<string, string>;
  /** The plan as EXPLAIN gives it, for the job's details (not read when planning). */
  plan?: string[];
}

/** What GET /jobs/:id shows of a SQL job: its statement and its plan. */
export function sqlDetails(ref: { builtin?: string; params?: Record<string, unknown> }): { sql?: { statement: string; plan: string[] } } {
  if (ref.builtin !== SQL_JOB || ref.params === undefined) return {};
  const params = ref.params as unknown as SqlJobParams;
  return { sql: { statement: params.sql, plan: params.plan ?? [] } };
}

/** What planning a statement gives: the job, its plan for EXPLAIN, and the columns of a SELECT. */
export interface PlannedJob {
  job: JobDefinition;
  explain: string[];
  columns: string[];
  updating: boolean;
  bounded: boolean;
}

/** Whether a session's settings run bounded tables as batch jobs. */
export function isBatch(settings: Record<string, string>): boolean {
  return (settings['execution.runtime-mode'] ?? 'streaming').toLowerCase() === 'batch';
}

/** The session's `table.local-time-zone`. */
export function timeZoneOf(settings: Record<string, string>): string {
  return settings['table.local-time-zone'] ?? DEFAULT_TIME_ZONE;
}

/** The built-in job: the statement of `params`, planned. */
export function sqlJob(params: Record<string, unknown>): JobDefinition {
  const p = params as unknown as SqlJobParams;
  return planSql(p.sql, new Catalog(p.catalog), p.settings ?? {}).job;
}

/** Plans one INSERT, SELECT or statement set into a job. */
export function planSql(text: string, catalog: Catalog, settings: Record<string, string>, name = 'sql'): PlannedJob {
  const [parsed] = parseStatements(text);
  if (parsed === undefined) throw new SqlError('SPW_ERR_SQL_SYNTAX', 'no statement to plan', undefined, undefined);
  return planStatement(parsed.statement, text, catalog, settings, name);
}

export function planStatement(statement: Statement, text: string, catalog: Catalog, settings: Record<string, string>, name = 'sql'): PlannedJob {
  const job = new JobBuilder(name);
  const explain: string[] = [];
  const { udfs, scalarUdfs, aggregateUdfs } = userFunctions(catalog.allFunctions());
  const options = { catalog, job, batch: isBatch(settings), udfs, scalarUdfs, aggregateUdfs, used: usedColumns(statement), explain, timeZone: timeZoneOf(settings) };
  const planner = new Planner(options, text);
  let columns: string[] = [];
  let updating = false;
  let bounded = true;
  const insert = (s: InsertStatement): void => {
    const table = catalog.table(s.table);
    if (table === undefined) throw SqlError.at('SPW_ERR_SQL_UNKNOWN_TABLE', `unknown table ${s.table}`, text, s.at);
    const rel = planner.materialized(planner.plan(s.query));
    const sinkColumns = physicalColumns(table);
    if (rel.fields.length !== sinkColumns.length) {
      throw SqlError.at('SPW_ERR_SQL_TYPE', `the query gives ${rel.fields.length} columns and table ${table.name} has ${sinkColumns.length}`, text, s.query.at);
    }
    if (rel.updating && !sinkTakesUpdates(table)) {
      throw SqlError.at(
        'SPW_ERR_SQL_UNSUPPORTED',
        `table ${table.name} is append-only and the query gives an updating result (an unwindowed GROUP BY, join or Top-N): give the table a PRIMARY KEY ... NOT ENFORCED on an upsert connector (postgres, jdbc), or use a window`,
        text,
        s.at,
      );
    }
    writeSink(rel.stream, table, rel.updating);
    explain.push(`Sink ${table.name} (${table.options.connector ?? '?'}${rel.updating ? ', upsert' : ''})`);
    updating ||= rel.updating;
    bounded &&= rel.bounded;
  };
  switch (statement.k) {
    case 'insert':
      insert(statement);
      break;
    case 'statementSet':
      for (const s of statement.inserts) insert(s);
      break;
    case 'query': {
      const rel = planner.materialized(planner.plan(statement.query));
      collectRows(rel, timeZoneOf(settings));
      explain.push('Sink collect (the client)');
      columns = rel.fields.map((f) => f.name);
      updating = rel.updating;
      bounded = rel.bounded;
      break;
    }
    default:
      throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', `a ${statement.k} statement is not a job`, text, statement.at);
  }
  return { job: job.build(), explain, columns, updating, bounded };
}

/** A SELECT's rows to the collect sink: objects by column (timestamps in Flink's form, TIMESTAMP_LTZ in the session's zone), or `{ op, row }` changes. */
function collectRows(rel: Rel, timeZone: string): void {
  const names = rel.fields.map((f) => f.name);
  const types = rel.fields.map((f) => f.type);
  const external = (row: Row): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) out[names[i]!] = externalValue(row[i], types[i]!, timeZone);
    return out;
  };
  const objects = rel.updating ? rel.stream.map((c) => ({ op: (c as unknown as Change).op, row: external((c as unknown as Change).row) })) : rel.stream.map(external);
  (objects as unknown as Stream<Record<string, string>>).collect();
}

type UserFn = (...args: unknown[]) => unknown;

/**
 * The catalogue's functions compiled from their modules' sources: a default export that
 * is a function is scalar; an object with create/add/merge/result is an aggregate.
 */
function userFunctions(functions: readonly CatalogFunction[]): { udfs: UserFn[]; scalarUdfs: Map<string, number>; aggregateUdfs: Map<string, number> } {
  const udfs: UserFn[] = [];
  const scalarUdfs = new Map<string, number>();
  const aggregateUdfs = new Map<string, number>();
  for (const f of functions) {
    const exported = moduleDefault(f);
    const index = udfs.length;
    udfs.push(exported as UserFn);
    if (typeof exported === 'function') scalarUdfs.set(f.name.toUpperCase(), index);
    else aggregateUdfs.set(f.name.toUpperCase(), index);
  }
  return { udfs, scalarUdfs, aggregateUdfs };
}

/** The default export of a function's module (a self-contained ES module: no imports). */
function moduleDefault(f: CatalogFunction): unknown {
  if (/^\s*import\s/m.test(f.source)) throw new SqlError('SPW_ERR_SQL_UNSUPPORTED', `function ${f.name}: its module ${f.module} imports others; a function's module stands alone`, undefined, undefined);
  const body = f.source.replace(/export\s+default\s+/, 'return ').replace(/^\s*export\s+/gm, '');
  try {
    const value = new Function(`"use strict";\n${body}`)() as unknown;
    if (typeof value === 'function') return value;
    const agg = value as Record<string, unknown> | undefined;
    if (agg && ['create', 'add', 'merge', 'result'].every((m) => typeof agg[m] === 'function')) return agg;
  } catch (error) {
    throw new SqlError('SPW_ERR_SQL_TYPE', `function ${f.name}: its module ${f.module} does not load: ${(error as Error).message}`, undefined, undefined);
  }
  throw new SqlError('SPW_ERR_SQL_TYPE', `function ${f.name}: the default export of ${f.module} is neither a function nor an aggregate (create, add, merge, result)`, undefined, undefined);
}

export type { Query };

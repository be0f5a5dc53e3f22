/**
 * A SQL session: runs statements in order against a catalogue and settings (Flink's
 * TableEnvironment). DDL, SET, SHOW, DESCRIBE and EXPLAIN answer at once; each INSERT (or
 * statement set) and SELECT is planned here, so that any SQL error is raised before
 * anything is submitted, and given back as a submission of the built-in job `sql`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Catalog } from './Catalog.js';
import type { Statement } from './parser/Ast.js';
import { parseStatements } from './parser/Parser.js';
import { planStatement, SQL_JOB, type SqlJobParams } from './SqlJob.js';
import { SqlError } from './SqlError.js';
import { isTimeZone } from './TimeZone.js';
import { typeText } from './Types.js';

/** What one statement gave. */
export type SqlResult =
  | { kind: 'ok'; statement: string; message: string }
  | { kind: 'table'; statement: string; columns: string[]; rows: unknown[][] }
  | {
      kind: 'job';
      statement: string;
      /** The body of POST /jobs. */
      submission: { job: string; name: string; params: SqlJobParams; parallelism?: number; checkpoints?: { interval: number; directory?: string } };
      /** A SELECT's columns; empty for an INSERT. */
      columns: string[];
      updating: boolean;
      bounded: boolean;
      plan: string[];
    };

/** The keys SET takes. */
export const SQL_SETTINGS = ['execution.runtime-mode', 'execution.checkpointing.interval', 'state.checkpoints.dir', 'parallelism.default', 'table.local-time-zone'];

export class SqlSession {
  readonly settings: Record<string, string>;

  constructor(
    readonly catalog: Catalog,
    settings: Record<string, string> = {},
    /** Where a function's module path is read from (relative paths). */
    private readonly baseDir = process.cwd(),
  ) {
    this.settings = { ...settings };
  }

  /** Runs every statement of `text` in order; the first error stops the rest and submits nothing of its statement. */
  execute(text: string): SqlResult[] {
    return parseStatements(text).map(({ statement, text: own }) => this.run(statement, own, text));
  }

  /** Runs one statement: `own` is its text, `text` all of them (the statement's positions, and so its errors', are in it). */
  private run(statement: Statement, own: string, text: string): SqlResult {
    switch (statement.k) {
      case 'createTable': {
        // Kept with positions in its own text, which the catalogue keeps with it.
        const [alone] = parseStatements(own);
        this.catalog.addTable(alone!.statement as typeof statement, own);
        return { kind: 'ok', statement: own, message: `table ${statement.name} created` };
      }
      case 'createView': {
        const view = { name: statement.name, query: statement.text };
        // Planned once now, so that an unknown table or column is this statement's error.
        planStatement({ k: 'query', at: 0, query: statement.query }, text, this.catalog, this.settings);
        this.catalog.addView(view, text, statement.at);
        return { kind: 'ok', statement: own, message: `view ${statement.name} created` };
      }
      case 'createFunction': {
        if (statement.language !== 'JAVASCRIPT') throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', `LANGUAGE ${statement.language}: a function is a JavaScript module (LANGUAGE JAVASCRIPT)`, text, statement.at);
        const file = path.resolve(this.baseDir, statement.module);
        if (!fs.existsSync(file)) throw SqlError.at('SPW_ERR_SQL_UNKNOWN_FUNCTION', `function ${statement.name}: no module at ${statement.module}`, text, statement.at);
        this.catalog.addFunction({ name: statement.name, module: statement.module, source: fs.readFileSync(file, 'utf8') });
        return { kind: 'ok', statement: own, message: `function ${statement.name} created` };
      }
      case 'set': {
        if (!SQL_SETTINGS.includes(statement.key)) throw SqlError.at('SPW_ERR_SQL_UNSUPPORTED', `unknown setting '${statement.key}' (${SQL_SETTINGS.join(', ')})`, text, statement.at);
        if (statement.key === 'table.local-time-zone' && !isTimeZone(statement.value)) {
          throw SqlError.at('SPW_ERR_SQL_TYPE', `unknown time zone '${statement.value}' (a region such as 'Asia/Shanghai', 'UTC', or an offset such as 'GMT+08:00')`, text, statement.at);
        }
        this.settings[statement.key] = statement.value;
        return { kind: 'ok', statement: own, message: `${statement.key} = ${statement.value}` };
      }
      case 'showTables':
        return { kind: 'table', statement: own, columns: ['table name'], rows: this.catalog.names().map((n) => [n]) };
      case 'describe':
        return this.describe(statement.name, own, text, statement.at);
      case 'drop': {
        const dropped = this.catalog.drop(statement.what, statement.name);
        if (!dropped && !statement.ifExists) throw SqlError.at(statement.what === 'FUNCTION' ? 'SPW_ERR_SQL_UNKNOWN_FUNCTION' : 'SPW_ERR_SQL_UNKNOWN_TABLE', `no ${statement.what.toLowerCase()} named ${statement.name}`, text, statement.at);
        return { kind: 'ok', statement: own, message: `${statement.what.toLowerCase()} ${statement.name} dropped` };
      }
      case 'explain': {
        const planned = planStatement(statement.statement, text, this.catalog, this.settings);
        const rows = [...planned.explain.map((line) => ['logical', line]), ...physicalPlan(planned.job).map((line) => ['physical', line])];
        return { kind: 'table', statement: own, columns: ['plan', 'step'], rows };
      }
      case 'insert':
      case 'statementSet':
      case 'query':
        return this.job(statement, own, text);
    }
  }

  private job(statement: Statement, own: string, text: string): SqlResult {
    const planned = planStatement(statement, text, this.catalog, this.settings);
    const params: SqlJobParams = { sql: own, catalog: this.catalog.snapshot(), settings: { ...this.settings } };
    const submission: Extract<SqlResult, { kind: 'job' }>['submission'] = { job: SQL_JOB, name: jobName(statement), params };
    const parallelism = this.settings['parallelism.default'];
    if (parallelism !== undefined) submission.parallelism = Number(parallelism);
    const interval = this.settings['execution.checkpointing.interval'];
    const directory = this.settings['state.checkpoints.dir'];
    if (interval !== undefined) submission.checkpoints = { interval: durationMs(interval), ...(directory === undefined ? {} : { directory: directory.replace(/^file:\/\//, '') }) };
    return { kind: 'job', statement: own, submission, columns: planned.columns, updating: planned.updating, bounded: planned.bounded, plan: [...planned.explain, ...physicalPlan(planned.job)] };
  }

  private describe(name: string, own: string, text: string, at: number): SqlResult {
    const table = this.catalog.table(name);
    if (table !== undefined) {
      const rows = table.columns.map((c) => [c.name, c.type ? typeText(c.type) : 'computed', table.primaryKey.includes(c.name) ? 'PRI' : '', table.watermark?.column === c.name ? 'WATERMARK' : '']);
      return { kind: 'table', statement: own, columns: ['name', 'type', 'key', 'extras'], rows };
    }
    if (this.catalog.view(name) !== undefined) {
      const planned = planStatement({ k: 'query', at: 0, query: (parseStatements(this.catalog.view(name)!.query)[0]!.statement as Extract<Statement, { k: 'query' }>).query }, text, this.catalog, this.settings);
      return { kind: 'table', statement: own, columns: ['name'], rows: planned.columns.map((c) => [c]) };
    }
    throw SqlError.at('SPW_ERR_SQL_UNKNOWN_TABLE', `unknown table ${name}`, text, at);
  }
}

/** The job's stages as EXPLAIN shows them: each stage's inputs (exchanges), operators, whether they hold state, and its sink. */
export function physicalPlan(job: { stages: { name: string; source?: { kind: string }; inputs?: { from: string; partitioning: { type: string } }[]; operators?: { kind: string }[]; sink?: { kind: string } }[] }): string[] {
  const stateful = new Set(['process', 'coProcess', 'window', 'windowJoin', 'combineByKey', 'reduceByKey', 'join', 'sortBy', 'accumulate', 'fold', 'aggregate']);
  return job.stages.map((stage) => {
    const from = stage.source ? `source ${stage.source.kind}` : (stage.inputs ?? []).map((i) => `${i.partitioning.type} exchange from ${i.from}`).join(' + ');
    const ops = (stage.operators ?? []).map((op) => (stateful.has(op.kind) ? `${op.kind} (state)` : op.kind)).join(' -> ');
    return `stage ${stage.name}: ${from}${ops ? ` -> ${ops}` : ''}${stage.sink ? ` -> sink ${stage.sink.kind}` : ''}`;
  });
}

function jobName(statement: Statement): string {
  if (statement.k === 'insert') return `insert-into-${statement.table}`;
  if (statement.k === 'statementSet') return `statement-set-${statement.inserts.map((s) => s.table).join('-')}`;
  return 'select';
}

/** `10s`, `1 min`, `500 ms`, `2000` (ms) as milliseconds. */
function durationMs(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|min|m|h)?\s*$/i.exec(text);
  if (!m) throw new SqlError('SPW_ERR_SQL_TYPE', `'${text}' is not a duration (500 ms, 10 s, 1 min)`, undefined, undefined);
  const unit = (m[2] ?? 'ms').toLowerCase();
  return Number(m[1]) * ({ ms: 1, s: 1000, sec: 1000, min: 60_000, m: 60_000, h: 3_600_000 } as Record<string, number>)[unit]!;
}


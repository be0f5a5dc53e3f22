/**
 * The SQL catalogue: tables (as their CREATE TABLE says), views (their query's text) and
 * functions (their JavaScript module's source, read when created, so every task runs the
 * same code). Plain data, so that the JobManager keeps it in its store and every task
 * plans a SQL job from the same snapshot.
 */
import type { CreateTableStatement, Expr, SqlType } from './parser/Ast.js';
import { SqlError } from './SqlError.js';

export interface CatalogColumn {
  name: string;
  /** A physical column's type; a computed column's is known once its expression is bound. */
  type?: SqlType;
  expr?: Expr;
  /** The text the computed column's expression came from (positions in `expr` refer to it). */
  exprText?: string;
}

export interface CatalogTable {
  name: string;
  columns: CatalogColumn[];
  watermark?: { column: string; expr: Expr };
  primaryKey: string[];
  partitionedBy: string[];
  options: Record<string, string>;
  /** The statement's text: `expr` positions refer to it. */
  text: string;
}

export interface CatalogView {
  name: string;
  /** The view's query, as written. */
  query: string;
}

export interface CatalogFunction {
  name: string;
  /** The module's path as the statement gave it. */
  module: string;
  /** The module's source, read when the function was created. */
  source: string;
}

/** The catalogue as data: what the JobManager stores and a SQL job's params carry. */
export interface CatalogSnapshot {
  tables: CatalogTable[];
  views: CatalogView[];
  functions: CatalogFunction[];
}

export class Catalog {
  private readonly tables = new Map<string, CatalogTable>();
  private readonly views = new Map<string, CatalogView>();
  private readonly functions = new Map<string, CatalogFunction>();

  constructor(snapshot?: CatalogSnapshot) {
    for (const t of snapshot?.tables ?? []) this.tables.set(t.name, t);
    for (const v of snapshot?.views ?? []) this.views.set(v.name, v);
    for (const f of snapshot?.functions ?? []) this.functions.set(f.name.toUpperCase(), f);
  }

  snapshot(): CatalogSnapshot {
    return { tables: [...this.tables.values()], views: [...this.views.values()], functions: [...this.functions.values()] };
  }

  addTable(statement: CreateTableStatement, text: string): void {
    if (this.has(statement.name)) {
      if (statement.ifNotExists) return;
      throw SqlError.at('SPW_ERR_SQL_TYPE', `a table or view named ${statement.name} exists already`, text, statement.at);
    }
    const columns = statement.columns.map((c): CatalogColumn => (c.expr ? { name: c.name, expr: c.expr, exprText: text } : { name: c.name, type: c.type! }));
    this.tables.set(statement.name, {
      name: statement.name,
      columns,
      watermark: statement.watermark,
      primaryKey: statement.primaryKey,
      partitionedBy: statement.partitionedBy,
      options: statement.options,
      text,
    });
  }

  addView(view: CatalogView, text: string, at: number): void {
    if (this.has(view.name)) throw SqlError.at('SPW_ERR_SQL_TYPE', `a table or view named ${view.name} exists already`, text, at);
    this.views.set(view.name, view);
  }

  addFunction(fn: CatalogFunction): void {
    this.functions.set(fn.name.toUpperCase(), fn);
  }

  table(name: string): CatalogTable | undefined {
    return this.tables.get(name) ?? [...this.tables.values()].find((t) => t.name.toLowerCase() === name.toLowerCase());
  }

  view(name: string): CatalogView | undefined {
    return this.views.get(name) ?? [...this.views.values()].find((v) => v.name.toLowerCase() === name.toLowerCase());
  }

  fn(name: string): CatalogFunction | undefined {
    return this.functions.get(name.toUpperCase());
  }

  allFunctions(): CatalogFunction[] {
    return [...this.functions.values()];
  }

  has(name: string): boolean {
    return this.table(name) !== undefined || this.view(name) !== undefined;
  }

  /** Table and view names, sorted. */
  names(): string[] {
    return [...this.tables.keys(), ...this.views.keys()].sort();
  }

  /** Removes a table, view or function; false when there was none. */
  drop(what: 'TABLE' | 'VIEW' | 'FUNCTION', name: string): boolean {
    if (what === 'TABLE') return this.tables.delete(this.table(name)?.name ?? name);
    if (what === 'VIEW') return this.views.delete(this.view(name)?.name ?? name);
    return this.functions.delete(name.toUpperCase());
  }
}

/**
 * The syntax tree of Flink SQL statements as src/sql/parser/Parser.ts reads them. Every
 * node carries `at`, the offset of its first token, for errors with a line and column.
 */

/** A Flink type: `BIGINT`, `DECIMAL(23, 3)`, `TIMESTAMP(3)`, `ROW<a INT, b STRING>`, `ARRAY<INT>`, `MAP<STRING, INT>`. */
export interface SqlType {
  name: string;
  params: number[];
  fields?: { name: string; type: SqlType }[];
  element?: SqlType;
  key?: SqlType;
  value?: SqlType;
}

export type Expr =
  | { k: 'lit'; at: number; v: number | string | boolean | null }
  /** `INTERVAL '4' SECOND`, as milliseconds. */
  | { k: 'interval'; at: number; ms: number }
  /** A column, or a field of a ROW column: `price`, `B.price`, `person.id`, `B.person.id`. */
  | { k: 'col'; at: number; parts: string[] }
  | { k: 'star'; at: number; table?: string }
  | { k: 'bin'; at: number; op: string; l: Expr; r: Expr }
  | { k: 'un'; at: number; op: '-' | 'NOT'; e: Expr }
  | { k: 'call'; at: number; name: string; args: Expr[]; distinct: boolean; star: boolean; filter?: Expr; over?: Over }
  | { k: 'case'; at: number; operand?: Expr; whens: { when: Expr; then: Expr }[]; otherwise?: Expr }
  | { k: 'cast'; at: number; e: Expr; type: SqlType }
  | { k: 'isnull'; at: number; e: Expr; not: boolean }
  | { k: 'between'; at: number; e: Expr; lo: Expr; hi: Expr; not: boolean }
  | { k: 'in'; at: number; e: Expr; list: Expr[]; not: boolean }
  | { k: 'like'; at: number; e: Expr; pattern: Expr; not: boolean }
  | { k: 'extract'; at: number; unit: string; e: Expr };

export interface Over {
  partitionBy: Expr[];
  orderBy: OrderItem[];
}

export interface OrderItem {
  e: Expr;
  desc: boolean;
}

export interface SelectItem {
  e: Expr;
  alias?: string;
}

export type Query =
  | {
      k: 'select';
      at: number;
      distinct: boolean;
      items: SelectItem[];
      from?: FromItem;
      where?: Expr;
      groupBy: Expr[];
      having?: Expr;
      orderBy: OrderItem[];
      limit?: number;
    }
  | { k: 'union'; at: number; all: boolean; left: Query; right: Query; orderBy: OrderItem[]; limit?: number };

export type WindowFunction = 'TUMBLE' | 'HOP' | 'CUMULATE' | 'SESSION';

export type FromItem =
  | { k: 'table'; at: number; name: string; alias?: string; systemTime?: Expr }
  | { k: 'subquery'; at: number; query: Query; alias?: string }
  /** `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))`, HOP (slide, size), CUMULATE (step, size), SESSION (PARTITION BY, gap). */
  | { k: 'tvf'; at: number; fn: WindowFunction; table: FromItem; partitionBy: Expr[]; timeColumn: string; intervals: number[]; alias?: string }
  | { k: 'join'; at: number; type: JoinType; left: FromItem; right: FromItem; on?: Expr };

export type JoinType = 'inner' | 'left' | 'right' | 'full' | 'cross';

export interface ColumnDefinition {
  name: string;
  at: number;
  /** A physical column's type; a computed column has `expr` instead. */
  type?: SqlType;
  expr?: Expr;
}

export type Statement =
  | {
      k: 'createTable';
      at: number;
      name: string;
      ifNotExists: boolean;
      columns: ColumnDefinition[];
      watermark?: { column: string; expr: Expr };
      primaryKey: string[];
      partitionedBy: string[];
      options: Record<string, string>;
    }
  | { k: 'createView'; at: number; name: string; query: Query; text: string }
  | { k: 'createFunction'; at: number; name: string; module: string; language: string }
  | { k: 'set'; at: number; key: string; value: string }
  | { k: 'insert'; at: number; table: string; query: Query }
  | { k: 'query'; at: number; query: Query }
  | { k: 'statementSet'; at: number; inserts: Extract<Statement, { k: 'insert' }>[] }
  | { k: 'explain'; at: number; statement: Statement }
  | { k: 'showTables'; at: number }
  | { k: 'describe'; at: number; name: string }
  | { k: 'drop'; at: number; what: 'TABLE' | 'VIEW' | 'FUNCTION'; name: string; ifExists: boolean };

export type InsertStatement = Extract<Statement, { k: 'insert' }>;
export type CreateTableStatement = Extract<Statement, { k: 'createTable' }>;

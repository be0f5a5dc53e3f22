/**
 * What a SQL query asks of a table's rows, in a shape a source can use to skip data it need
 * not read (a column reader's row groups by their statistics): a conjunction of comparisons
 * of one column with a literal. The planner still filters every row itself, so a source may
 * use as much or as little of it as it can.
 */
import type { Expr } from './parser/Ast.js';

export type PredicateOp = '=' | '<>' | '<' | '<=' | '>' | '>=' | 'IS NULL' | 'IS NOT NULL';

/** `column op value`; `value` is absent for IS NULL and IS NOT NULL. */
export interface ColumnPredicate {
  column: string;
  op: PredicateOp;
  value?: string | number | boolean;
}

/** Every row the source gives must pass all of them (and may pass none: the query filters again). */
export type SourcePredicate = ColumnPredicate[];

const FLIPPED: Record<string, PredicateOp> = { '=': '=', '<>': '<>', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

/**
 * The conjuncts of a WHERE clause that compare a column of the table with a literal, as a
 * SourcePredicate; `columnOf` names the table's column an identifier stands for, or undefined.
 */
export function sourcePredicate(conjuncts: readonly Expr[], columnOf: (parts: readonly string[]) => string | undefined): SourcePredicate {
  const out: SourcePredicate = [];
  const literal = (e: Expr): string | number | boolean | undefined => (e.k === 'lit' && e.v !== null ? e.v : undefined);
  for (const e of conjuncts) {
    if (e.k === 'isnull' && e.e.k === 'col') {
      const column = columnOf(e.e.parts);
      if (column !== undefined) out.push({ column, op: e.not ? 'IS NOT NULL' : 'IS NULL' });
      continue;
    }
    if (e.k === 'between' && !e.not && e.e.k === 'col') {
      const column = columnOf(e.e.parts);
      const lo = literal(e.lo);
      const hi = literal(e.hi);
      if (column !== undefined && lo !== undefined && hi !== undefined) out.push({ column, op: '>=', value: lo }, { column, op: '<=', value: hi });
      continue;
    }
    if (e.k !== 'bin' || FLIPPED[e.op] === undefined) continue;
    if (e.l.k === 'col' && literal(e.r) !== undefined) {
      const column = columnOf(e.l.parts);
      if (column !== undefined) out.push({ column, op: e.op as PredicateOp, value: literal(e.r)! });
    } else if (e.r.k === 'col' && literal(e.l) !== undefined) {
      const column = columnOf(e.r.parts);
      if (column !== undefined) out.push({ column, op: FLIPPED[e.op]!, value: literal(e.l)! });
    }
  }
  return out;
}

/** How EXPLAIN writes a predicate. */
export function predicateText(predicate: SourcePredicate): string {
  return predicate.map((p) => (p.value === undefined ? `${p.column} ${p.op}` : `${p.column} ${p.op} ${JSON.stringify(p.value)}`)).join(' AND ');
}

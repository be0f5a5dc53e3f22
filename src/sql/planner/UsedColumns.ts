/**
 * Which columns a statement reads, by name: what a source decodes (`readParquet`'s `columns`)
 * and which columns of a view are kept. A name is kept wherever any query of the statement
 * names it, qualified or not: more than needed, never less.
 */
import type { Query, SelectItem, Statement } from '../parser/Ast.js';
import { hasAggregate } from './Expressions.js';

/** Column names a statement (or a view's query) names, lower-cased; undefined where it selects `*` (every column is used). */
export function usedColumns(statement: Statement | Query): Set<string> | undefined {
  const used = new Set<string>();
  let star = false;
  JSON.stringify(statement, (key, value: unknown) => {
    if (value && typeof value === 'object' && 'k' in value) {
      const node = value as { k: string; parts?: string[]; timeColumn?: string };
      if (node.k === 'star') star = true;
      if (node.k === 'col') for (const part of node.parts!) used.add(part.toLowerCase());
      if (node.k === 'tvf') used.add(node.timeColumn!.toLowerCase());
    }
    return value;
  });
  return star ? undefined : used;
}

/** What a view's query reads planned inside a statement that reads `used`: its own names added. */
export function usedInView(used: ReadonlySet<string> | undefined, view: Query): Set<string> | undefined {
  const own = usedColumns(view);
  return used === undefined || own === undefined ? undefined : new Set([...used, ...own]);
}

/**
 * A view's query without the output columns the statement never names, as Flink's planner
 * prunes projections: a join then keeps only what is read of its rows in its state. Only a
 * plain projection is pruned (no DISTINCT, grouping, aggregate, OVER or ORDER BY, whose rows
 * a column less could change), and an item without a name stays.
 */
export function pruneView(view: Query, used: ReadonlySet<string> | undefined): Query {
  if (used === undefined || view.k !== 'select' || view.distinct || view.groupBy.length > 0 || view.having !== undefined || view.orderBy.length > 0) return view;
  if (view.items.some((i) => i.e.k === 'star' || hasAggregate(i.e) || (i.e.k === 'call' && i.e.over !== undefined))) return view;
  const name = (i: SelectItem): string | undefined => i.alias ?? (i.e.k === 'col' ? i.e.parts.at(-1) : undefined);
  const items = view.items.filter((i) => {
    const n = name(i);
    return n === undefined || used.has(n.toLowerCase());
  });
  return items.length === view.items.length || items.length === 0 ? view : { ...view, items };
}

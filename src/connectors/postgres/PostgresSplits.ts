import type { PostgresReadOptions } from './PostgresOptions.js';
import { quoteIdent } from './PostgresClient.js';

type Source = PostgresReadOptions;

/**
 * One split of a PostgreSQL source: the query's rows whose partition column is
 * `>= from` (absent: no lower end) and `< to` (absent: no upper end), with its NULLs if
 * `nulls`; without either bound, every row. `skip`: rows of it read before a restore.
 */
export interface PostgresSplit {
  index: number;
  from?: number;
  to?: number;
  nulls?: boolean;
  skip?: number;
}

/**
 * The splits of a source, as Spark's JDBC reader cuts them: `partitions` (or the
 * stage's parallelism) ranges of the partition column, of equal width between
 * lowerBound and upperBound (boundaries rounded down to whole numbers when both bounds
 * are, and no more ranges than whole numbers between them). The first range also takes
 * the NULLs and every value below its upper boundary, the last every value from its
 * lower one: together they cover every row once, whatever the bounds. One split
 * without a partition column.
 */
export function rangeSplits(source: Source, parallelism: number): PostgresSplit[] {
  if (source.partitionColumn === undefined) return [{ index: 0 }];
  const lower = source.lowerBound!;
  const upper = source.upperBound!;
  const whole = Number.isInteger(lower) && Number.isInteger(upper);
  let n = source.partitions ?? parallelism;
  if (whole) n = Math.max(1, Math.min(n, upper - lower));
  if (n === 1 || upper === lower) return [{ index: 0 }];
  const boundary = (i: number): number => (whole ? lower + Math.floor(((upper - lower) * i) / n) : lower + ((upper - lower) * i) / n);
  const splits: PostgresSplit[] = [{ index: 0, to: boundary(1), nulls: true }];
  for (let i = 1; i < n - 1; i++) splits.push({ index: i, from: boundary(i), to: boundary(i + 1) });
  splits.push({ index: n - 1, from: boundary(n - 1) });
  return splits;
}

/** The columns a split's rows are ordered by: the partition column and `orderBy`, only when `orderBy` is given. */
export function orderColumns(source: Source): string[] {
  if (source.orderBy === undefined) return [];
  const tieBreakers = typeof source.orderBy === 'string' ? [source.orderBy] : source.orderBy;
  const partition = source.partitionColumn === undefined || tieBreakers.includes(source.partitionColumn) ? [] : [source.partitionColumn];
  return [...partition, ...tieBreakers];
}

/**
 * The SQL of one split, its boundaries as parameters:
 *
 *   SELECT * FROM (<query>) AS spillway_split
 *   WHERE ("col" < $1 OR "col" IS NULL)          -- the first range
 *         "col" >= $1 AND "col" < $2             -- a middle one
 *         "col" >= $1                            -- the last
 *   ORDER BY "col", <orderBy>                    -- with orderBy only
 *   OFFSET $n                                    -- a split resumed after rows read
 *
 * The query as it is when there is nothing to add.
 */
export function splitQuery(source: Source, split: PostgresSplit): { text: string; values: number[] } {
  const query = source.query.trim().replace(/;\s*$/, '');
  const values: number[] = [];
  const where: string[] = [];
  // A whole boundary takes the column's own type (an index on it serves); a fractional one is numeric, which an integer column is compared as.
  const parameter = (value: number): string => {
    values.push(value);
    return Number.isInteger(value) ? `$${values.length}` : `$${values.length}::numeric`;
  };
  if (source.partitionColumn !== undefined) {
    const column = quoteIdent(source.partitionColumn);
    if (split.from !== undefined) where.push(`${column} >= ${parameter(split.from)}`);
    if (split.to !== undefined) {
      const below = `${column} < ${parameter(split.to)}`;
      where.push(split.nulls ? `(${below} OR ${column} IS NULL)` : below);
    }
  }
  const order = orderColumns(source);
  const skip = split.skip ?? 0;
  if (where.length === 0 && order.length === 0 && skip === 0) return { text: query, values };
  let text = `SELECT * FROM (${query}) AS spillway_split`;
  if (where.length > 0) text += ` WHERE ${where.join(' AND ')}`;
  if (order.length > 0) text += ` ORDER BY ${order.map(quoteIdent).join(', ')}`;
  if (skip > 0) {
    values.push(skip);
    text += ` OFFSET $${values.length}`;
  }
  return { text, values };
}

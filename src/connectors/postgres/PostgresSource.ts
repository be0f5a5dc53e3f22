import type { Client } from 'pg';
import type { SourceOf } from '../../job/JobDefinition.js';
import { countProblem, isName, msProblem, redactUrl, serviceError, urlProblem } from '../ServiceConnection.js';
import { forEachSplit, type SourceContext, type SourceSpec } from '../SourceSpec.js';
import { ListSupply } from '../ListSupply.js';
import { connectPostgres } from './PostgresClient.js';
import { orderColumns, rangeSplits, splitQuery, type PostgresSplit } from './PostgresSplits.js';

/** Rows per FETCH unless told `fetchSize`. */
export const DEFAULT_FETCH_SIZE = 1000;

type Source = SourceOf<'postgres'>;

const WHO = 'the PostgreSQL source';

/**
 * `{ kind: 'postgres', url, query, partitionColumn, lowerBound, upperBound, partitions }`:
 * the rows of a query, each an object keyed by its columns (node-postgres's types:
 * bigint and numeric as strings, timestamps as Dates, json as values), split by ranges
 * of a numeric column as Spark's JDBC reader does (PostgresSplits.ts), the JobManager
 * handing the ranges out as the subtasks ask. Each split is read through a cursor of
 * its own in a read-only REPEATABLE READ transaction, `fetchSize` rows at a time.
 * Resuming: with `orderBy` the position is the rows read of the split (skipped with
 * OFFSET on a restore); without, a split is a unit (checkpoints between splits only).
 */
export const POSTGRES_SOURCE: SourceSpec<Source> = {
  kind: 'postgres',
  validate(source) {
    const url = urlProblem(source.url, ['postgres:', 'postgresql:']);
    if (url !== undefined) return url;
    if (!isName(source.query)) return 'needs a query, a SELECT';
    if (source.partitionColumn !== undefined) {
      if (!isName(source.partitionColumn)) return `needs partitionColumn as a column name, not ${JSON.stringify(source.partitionColumn)}`;
      for (const bound of ['lowerBound', 'upperBound'] as const) {
        const value = source[bound];
        if (typeof value !== 'number' || !Number.isFinite(value)) return `needs ${bound} as a number with partitionColumn, not ${JSON.stringify(value)}`;
      }
      if (source.lowerBound! > source.upperBound!) return `needs lowerBound (${source.lowerBound}) not above upperBound (${source.upperBound})`;
    } else {
      const stray = (['lowerBound', 'upperBound', 'partitions'] as const).find((name) => source[name] !== undefined);
      if (stray !== undefined) return `has ${stray} but no partitionColumn to split by`;
    }
    if (source.orderBy !== undefined) {
      const columns = typeof source.orderBy === 'string' ? [source.orderBy] : source.orderBy;
      if (!Array.isArray(columns) || columns.length === 0 || !columns.every(isName)) return `needs orderBy as a column or a list of columns, not ${JSON.stringify(source.orderBy)}`;
    }
    return countProblem('partitions', source.partitions) ?? countProblem('fetchSize', source.fetchSize) ?? msProblem('connectTimeout', source.connectTimeout);
  },
  bounded: () => true,
  splits: (source, parallelism) => new ListSupply<PostgresSplit>(rangeSplits(source, parallelism)),
  async read(source, context) {
    const client = await connectPostgres(source.url, { code: 'SPW_ERR_SOURCE_IO', who: WHO, connectTimeout: source.connectTimeout });
    try {
      await forEachSplit<PostgresSplit>(context, (split, at) => readSplit(client, source, split, context, at), resumeAfterRows);
    } finally {
      await client.end().catch(() => undefined);
    }
  },
  resume: (split, position) => resumeAfterRows(split as PostgresSplit, position),
};

/** What is left of a split once `position` of its rows (in its order) were read. */
function resumeAfterRows(split: PostgresSplit, position: unknown): PostgresSplit {
  return { ...split, skip: position as number };
}

/**
 * Reads one split through a cursor, `fetchSize` rows a round trip. Its position is
 * marked at its start and, when its rows have a total order (`orderBy`), after every
 * fetch: the rows read so far.
 */
async function readSplit(client: Client, source: Source, split: PostgresSplit, context: SourceContext, at: (position: unknown) => void | Promise<void>): Promise<void> {
  const { text, values } = splitQuery(source, split);
  const fetchSize = source.fetchSize ?? DEFAULT_FETCH_SIZE;
  const ordered = orderColumns(source).length > 0;
  let read = split.skip ?? 0;
  const marking = at(read);
  if (marking) await marking;
  const what = `${WHO} cannot read split ${split.index} of its query from PostgreSQL at ${redactUrl(source.url)}`;
  const query = async <T extends object>(sql: string, params?: unknown[]): Promise<T[]> => {
    try {
      return (await client.query<T>(sql, params)).rows;
    } catch (error) {
      throw serviceError('SPW_ERR_SOURCE_IO', what, error);
    }
  };
  await query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  try {
    await query(`DECLARE spillway_rows NO SCROLL CURSOR FOR ${text}`, values);
    for (;;) {
      const rows = await query<Record<string, unknown>>(`FETCH ${fetchSize} FROM spillway_rows`);
      for (const row of rows) {
        const waiting = context.push(row);
        if (waiting) await waiting;
      }
      read += rows.length;
      if (rows.length < fetchSize) break;
      if (ordered) {
        const marked = at(read);
        if (marked) await marked;
      }
      await context.pause();
    }
    await query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

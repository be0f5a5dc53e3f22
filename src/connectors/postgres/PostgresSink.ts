import type { Client } from 'pg';
import { SpillwayError } from '../../errors/Errors.js';
import type { SinkOf } from '../../job/JobDefinition.js';
import { countProblem, isName, msProblem, redactUrl, serviceError, urlProblem } from '../ServiceConnection.js';
import type { SinkContext, SinkSpec, SinkWriter } from '../SinkSpec.js';
import { TwoPhaseCommitSink, type SinkTransaction } from '../TwoPhaseCommitSink.js';
import { connectPostgres, quoteIdent, quoteName } from './PostgresClient.js';

/** Rows per INSERT unless told `batchSize`. */
export const DEFAULT_INSERT_BATCH = 1000;
/** How often an unbounded job's sink without checkpoints writes what it holds, ms. */
export const POSTGRES_FLUSH_INTERVAL_MS = 200;
/** The table of each sink subtask's last committed checkpoint unless told `commitTable`. */
export const DEFAULT_COMMIT_TABLE = 'spillway_sink_commits';

type Sink = SinkOf<'postgres'>;

const WHO = 'the PostgreSQL sink';

/** What a checkpoint stores of a PostgreSQL sink: the job that prepared it (whose commit row guards it) and the rows since the last checkpoint, each its columns' values in order. */
export interface PostgresTransaction extends SinkTransaction {
  rows: unknown[][];
}

/**
 * `{ kind: 'postgres', url, table, columns, upsertKey }`: each record a row of the
 * table, written in batches, each one INSERT of `batchSize` rows
 * (`INSERT ... SELECT ... FROM json_populate_recordset(NULL::table, $1)`: one
 * parameter per batch, each value converted to its column's type by PostgreSQL),
 * `ON CONFLICT (upsertKey) DO UPDATE` with an upsert key (a batch keeps the last row of
 * each key). Without checkpoints: a bounded job's task writes in one transaction,
 * committed at the end of its input (a failed task leaves nothing); an unbounded one's
 * commits each batch. With checkpoints, exactly once: a checkpoint's rows are written
 * when it completes, in one transaction with the subtask's row in the commit table,
 * locked and checked first, so a commit of a checkpoint not newer than the one stored
 * writes nothing.
 */
export const POSTGRES_SINK: SinkSpec<Sink> = {
  kind: 'postgres',
  validate(sink) {
    const url = urlProblem(sink.url, ['postgres:', 'postgresql:']);
    if (url !== undefined) return url;
    if (!isName(sink.table)) return `needs a table, not ${JSON.stringify(sink.table)}`;
    if (!Array.isArray(sink.columns) || sink.columns.length === 0 || !sink.columns.every(isName)) return `needs columns, a list of column names, not ${JSON.stringify(sink.columns)}`;
    if (new Set(sink.columns).size !== sink.columns.length) return `names a column twice in ${JSON.stringify(sink.columns)}`;
    if (sink.upsertKey !== undefined) {
      const key = typeof sink.upsertKey === 'string' ? [sink.upsertKey] : sink.upsertKey;
      if (!Array.isArray(key) || key.length === 0 || !key.every(isName)) return `needs upsertKey as a column or a list of columns, not ${JSON.stringify(sink.upsertKey)}`;
      const missing = key.find((column) => !sink.columns.includes(column));
      if (missing !== undefined) return `has upsertKey column ${missing}, which is not among its columns`;
    }
    for (const name of ['name', 'commitTable'] as const) {
      if (sink[name] !== undefined && !isName(sink[name])) return `needs ${name} as a non-empty string, not ${JSON.stringify(sink[name])}`;
    }
    return countProblem('batchSize', sink.batchSize) ?? msProblem('connectTimeout', sink.connectTimeout);
  },
  open: (sink, context) => openPostgresSink(sink, context),
};

/**
 * Opens a subtask's writer: connects, and with checkpoints makes the commit table if it
 * is absent. Only a writer of a job with checkpoints has the two-phase hooks
 * (prepareCommit, commit; the task commits what a restore hands it through them before
 * anything new); without, it writes through.
 */
export async function openPostgresSink(sink: Sink, context: SinkContext): Promise<SinkWriter> {
  const client = await connectPostgres(sink.url, { code: 'SPW_ERR_SINK_IO', who: WHO, connectTimeout: sink.connectTimeout });
  const writer = new PostgresWriter(client, sink, context);
  try {
    if (context.checkpointed) await writer.createCommitTable();
  } catch (error) {
    writer.abort();
    throw error;
  }
  if (context.checkpointed) return writer;
  if (!context.bounded) context.every(POSTGRES_FLUSH_INTERVAL_MS, () => writer.flush());
  return { push: (record) => writer.push(record), end: () => writer.end(), abort: () => writer.abort() };
}

/** A record's values in the order of `columns`; refuses what is no object. */
export function rowOf(record: unknown, columns: readonly string[]): unknown[] {
  if (record === null || typeof record !== 'object' || Array.isArray(record)) {
    throw new SpillwayError('SPW_ERR_SINK_RECORD', `${WHO} writes objects keyed by column (${columns.join(', ')}), not ${Array.isArray(record) ? 'an array' : record === null ? 'null' : typeof record}`);
  }
  const row = new Array<unknown>(columns.length);
  for (let i = 0; i < columns.length; i++) row[i] = (record as Record<string, unknown>)[columns[i]];
  return row;
}

/** A value as JSON that json_populate_recordset reads into its column: bytes as bytea's hex, a bigint as a number, NaN and infinities as float's words. */
function jsonValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : `"${String(value)}"`;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return value.toString();
    case 'undefined':
      return 'null';
    default:
      if (value === null) return 'null';
      if (value instanceof Date) return `"${value.toISOString()}"`;
      if (value instanceof Uint8Array) return `"\\\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}"`;
      return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  }
}

/** The rows as one JSON array of objects keyed by column. */
export function rowsJson(columns: readonly string[], rows: readonly unknown[][]): string {
  const keys = columns.map((column) => `${JSON.stringify(column)}:`);
  const parts = new Array<string>(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    let text = '{';
    for (let c = 0; c < keys.length; c++) text += (c === 0 ? '' : ',') + keys[c] + jsonValue(row[c]);
    parts[r] = text + '}';
  }
  return `[${parts.join(',')}]`;
}

class PostgresWriter extends TwoPhaseCommitSink<PostgresTransaction> {
  private readonly insertSql: string;
  /** Indexes of the upsert key's columns: a batch keeps the last row of each key (ON CONFLICT DO UPDATE takes a key once a statement). */
  private readonly keyIndexes: number[] | undefined;
  private readonly commitTable: string;
  private readonly sinkName: string;
  /** Without checkpoints, bounded: the task's one transaction is open. */
  private open = false;

  constructor(
    private readonly client: Client,
    private readonly sink: Sink,
    context: SinkContext,
  ) {
    super(context, sink.batchSize ?? DEFAULT_INSERT_BATCH);
    const table = quoteName(sink.table);
    const columns = sink.columns.map(quoteIdent).join(', ');
    let sql = `INSERT INTO ${table} (${columns}) SELECT ${columns} FROM json_populate_recordset(NULL::${table}, $1::json)`;
    if (sink.upsertKey !== undefined) {
      const key = typeof sink.upsertKey === 'string' ? [sink.upsertKey] : sink.upsertKey;
      const rest = sink.columns.filter((column) => !key.includes(column));
      const update = rest.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${rest.map((c) => `${quoteIdent(c)} = EXCLUDED.${quoteIdent(c)}`).join(', ')}`;
      sql += ` ON CONFLICT (${key.map(quoteIdent).join(', ')}) ${update}`;
      this.keyIndexes = key.map((column) => sink.columns.indexOf(column));
    }
    this.insertSql = sql;
    this.commitTable = quoteName(sink.commitTable ?? DEFAULT_COMMIT_TABLE);
    this.sinkName = sink.name ?? sink.table;
  }

  protected beginTransaction(): PostgresTransaction {
    return { job: this.context.jobId, rows: [] };
  }

  protected invoke(transaction: PostgresTransaction, record: unknown): void {
    transaction.rows.push(rowOf(record, this.sink.columns));
  }

  protected size(transaction: PostgresTransaction): number {
    return transaction.rows.length;
  }

  /** A bounded job's task writes in its one transaction, opened at its first rows. */
  protected async writeThrough(transaction: PostgresTransaction): Promise<void> {
    if (this.context.bounded && !this.open) {
      await this.sql('BEGIN');
      this.open = true;
    }
    await this.insert(transaction.rows);
  }

  /** Commits the bounded task's one transaction. */
  protected override async finishWriteThrough(): Promise<void> {
    if (this.open) await this.serially(async () => void (await this.sql('COMMIT')));
    this.open = false;
  }

  protected close(): Promise<void> {
    return this.client.end().catch(() => undefined);
  }

  /** An open transaction goes with the connection: PostgreSQL rolls it back. */
  protected disconnect(): void {
    void this.close();
  }

  /**
   * Makes the commit table if it is absent: one row per job, sink and subtask, its last
   * committed checkpoint id. Under an advisory lock, as subtasks create it together.
   */
  async createCommitTable(): Promise<void> {
    await this.serially(async () => {
      await this.sql('BEGIN');
      try {
        await this.sql('SELECT pg_advisory_xact_lock(hashtext($1))', [this.commitTable]);
        await this.sql(
          `CREATE TABLE IF NOT EXISTS ${this.commitTable} (job_id text NOT NULL, sink text NOT NULL, subtask integer NOT NULL, ` +
            'checkpoint_id bigint NOT NULL, committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (job_id, sink, subtask))',
        );
        await this.sql('COMMIT');
      } catch (error) {
        await this.client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }

  /**
   * One checkpoint's rows and its id in one transaction: the subtask's commit row is
   * inserted or locked (ON CONFLICT DO UPDATE takes its row lock) and its stored id read
   * in one statement; a stored id not below `checkpointId` is a commit made before (a
   * retry after a crash): nothing is written. A second attempt committing meanwhile
   * waits on the lock, then finds the new id.
   */
  protected async commitTransaction(checkpointId: number, transaction: PostgresTransaction): Promise<void> {
    await this.sql('BEGIN');
    try {
      const key = [transaction.job, this.sinkName, this.context.subtask];
      const [stored] = await this.sql<{ checkpoint_id: string }>(
        `INSERT INTO ${this.commitTable} AS c (job_id, sink, subtask, checkpoint_id) VALUES ($1, $2, $3, -1) ` +
          'ON CONFLICT (job_id, sink, subtask) DO UPDATE SET checkpoint_id = c.checkpoint_id RETURNING c.checkpoint_id',
        key,
      );
      if (Number(stored.checkpoint_id) >= checkpointId) {
        await this.sql('ROLLBACK');
      } else {
        for (let from = 0; from < transaction.rows.length; from += this.batch) await this.insert(transaction.rows.slice(from, from + this.batch));
        await this.sql(`UPDATE ${this.commitTable} SET checkpoint_id = $4, committed_at = now() WHERE job_id = $1 AND sink = $2 AND subtask = $3`, [...key, checkpointId]);
        await this.sql('COMMIT');
      }
    } catch (error) {
      await this.client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  /** One INSERT of the rows (the last of each upsert key). */
  private async insert(rows: unknown[][]): Promise<void> {
    if (rows.length === 0) return;
    await this.sql(this.insertSql, [rowsJson(this.sink.columns, this.keyIndexes === undefined ? rows : lastOfEachKey(rows, this.keyIndexes))]);
  }

  private async sql<T extends object = object>(text: string, values?: unknown[]): Promise<T[]> {
    try {
      return (await this.client.query<T>(text, values)).rows;
    } catch (error) {
      throw serviceError('SPW_ERR_SINK_IO', `${WHO} cannot write to ${this.sink.table} at ${redactUrl(this.sink.url)}`, error);
    }
  }
}

/** The rows with the last of each key only, in the order of those last ones. */
function lastOfEachKey(rows: readonly unknown[][], keyIndexes: readonly number[]): unknown[][] {
  const byKey = new Map<string, unknown[]>();
  for (const row of rows) {
    const key = keyIndexes.length === 1 ? jsonValue(row[keyIndexes[0]]) : keyIndexes.map((i) => jsonValue(row[i])).join('\u0000');
    byKey.delete(key);
    byKey.set(key, row);
  }
  return byKey.size === rows.length ? (rows as unknown[][]) : [...byKey.values()];
}

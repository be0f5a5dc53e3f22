/** What `readPostgres` reads, and how. */
export interface PostgresReadOptions {
  /** `postgres://user[:password]@host:port/database` (libpq's URL, with its query parameters such as `sslmode` and `options`). */
  url: string;
  /** A SELECT (or VALUES): each row a record, an object keyed by its column names. */
  query: string;
  /**
   * A numeric column of the query to split it by (Spark's JDBC reader): `partitions`
   * ranges of equal width between `lowerBound` and `upperBound`, the first also taking
   * the NULLs and the values below `lowerBound`, the last the values from the last
   * boundary up, so that every row is read exactly once whatever the bounds. Without
   * it the query is one split.
   */
  partitionColumn?: string;
  /** With partitionColumn: where the ranges start (a number). */
  lowerBound?: number;
  /** With partitionColumn: where the ranges end (a number, not below lowerBound). */
  upperBound?: number;
  /** With partitionColumn: how many ranges (the stage's parallelism by default); fewer when whole-number bounds are closer together. */
  partitions?: number;
  /**
   * Columns that order the query's rows totally (a unique key, or what makes the
   * partition column one: a tie-breaker). Given, each split reads its rows in that order
   * (after the partition column) and a checkpoint may fall inside a split: its position
   * is the rows read, and a restore skips them (OFFSET), which is exact when the rows do
   * not change while the job runs. Without it, a split is a unit: checkpoints fall
   * between splits only, and a restore reads the split in progress again from its start.
   */
  orderBy?: string | string[];
  /** Rows per round trip of the split's cursor (FETCH), 1,000: what a reader holds at a time. */
  fetchSize?: number;
  /** How long to wait for PostgreSQL to connect, ms, 10,000. */
  connectTimeout?: number;
}

/** Where `writePostgres` writes, and how. */
export interface PostgresWriteOptions {
  /** `postgres://user[:password]@host:port/database`. */
  url: string;
  /** The table (`name` or `schema.name`; each part quoted as written, its case kept). */
  table: string;
  /** The columns written; a record is an object keyed by them (a missing one is NULL). */
  columns: string[];
  /**
   * A column or columns with a unique constraint: a row whose key is there already
   * updates it (INSERT ... ON CONFLICT (key) DO UPDATE), so the table holds the last
   * row of each key. Without it every record is a new row.
   */
  upsertKey?: string | string[];
  /** Names the sink in its commit table (the table's name by default); give one when two sinks of a job write one table. */
  name?: string;
  /** The table of each sink subtask's last committed checkpoint (`spillway_sink_commits`, in the connection's schema), made if absent. */
  commitTable?: string;
  /** Rows per INSERT, 1,000. */
  batchSize?: number;
  /** How long to wait for PostgreSQL to connect, ms, 10,000. */
  connectTimeout?: number;
}

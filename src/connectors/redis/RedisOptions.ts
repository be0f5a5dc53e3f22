/** An entry of a Redis stream, as `readRedisStream` gives it. */
export interface RedisStreamEntry {
  /** The stream's key. */
  stream: string;
  /** The entry's id, `<ms>-<seq>`. */
  id: string;
  /** The entry's fields and their values, decoded as UTF-8. */
  fields: Record<string, string>;
}

/** What `readRedisStream` reads, and how. */
export interface RedisStreamReadOptions {
  /** `redis://[[user]:password@]host:port[/db]` (or `rediss://` for TLS). */
  url: string;
  /** The streams' keys; each is a split, read whole by one subtask. */
  streams: string | string[];
  /**
   * Where to start: the entries after this id (XREAD's sense; `'0'`, the default, reads
   * every entry), or `'$'` for only those added after the job starts (the streams' last
   * ids are fixed then, at the first split assignment). One id for every stream, or one
   * per stream (`{ orders: '0', payments: '1700000000000-0' }`, `'0'` for those not named).
   */
  from?: string | Record<string, string>;
  /**
   * `true` (the default): each stream is read up to its last entry when the job starts
   * (fixed at the first split assignment, so every task and every restart agrees), and
   * the job ends. `false`: the job reads what keeps arriving until it is canceled.
   */
  bounded?: boolean;
  /** Entries per read (XREAD COUNT), 500. */
  batchSize?: number;
  /** Unbounded: how long one read waits for new entries (XREAD BLOCK), ms, 100: a cancel waits at most this long. */
  blockMs?: number;
  /** How long to wait for Redis to connect and answer, ms, 10,000. */
  connectTimeout?: number;
}

/** Where `writeRedisStream` writes, and how. */
export interface RedisStreamWriteOptions {
  /** `redis://[[user]:password@]host:port[/db]` (or `rediss://`). */
  url: string;
  /** The stream's key. Each record is an entry (XADD with an id Redis makes). */
  stream: string;
  /** Trims the stream to about this many entries as it is written (XADD MAXLEN ~). */
  maxLen?: number;
  /**
   * Names the sink in its commit keys (`spillway:sink:<name>:<job id>:<subtask>`); the
   * stream's key by default. Give one when two sinks of a job write one stream.
   */
  name?: string;
  /** Entries per pipelined batch, 500. */
  batchSize?: number;
  /** How long to wait for Redis to connect and answer, ms, 10,000. */
  connectTimeout?: number;
}

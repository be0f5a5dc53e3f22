import type { Redis } from 'ioredis';
import { SpillwayError } from '../../errors/Errors.js';
import { countProblem, isName, msProblem, redactUrl, serviceError, urlProblem } from '../ServiceConnection.js';
import type { SinkContext, SinkSpec, SinkWriter } from '../SinkSpec.js';
import { TwoPhaseCommitSink, type SinkTransaction } from '../TwoPhaseCommitSink.js';
import { connectRedis } from './RedisClient.js';
import type { RedisStreamWriteOptions } from './RedisOptions.js';

/** Each record an entry of a Redis stream (XADD); exactly once with checkpoints (MULTI/EXEC with a commit key per subtask). */
export type RedisStreamSinkDefinition = ({ kind: 'redisStream' } & RedisStreamWriteOptions);

/** Entries per pipelined batch unless told `batchSize`. */
export const DEFAULT_WRITE_BATCH = 500;
/** How often an unbounded job's sink without checkpoints sends what it holds, ms. */
export const REDIS_FLUSH_INTERVAL_MS = 100;
/** How often a commit tries again when its commit key changed between WATCH and EXEC (only a zombie attempt of the same subtask writes it). */
const COMMIT_TRIES = 5;

type Sink = RedisStreamSinkDefinition;

const WHO = 'the Redis stream sink';

/** An entry as XADD takes it: field, value, field, value, ... */
type FlatEntry = (string | Uint8Array)[];

/** What a checkpoint stores of a Redis stream sink: the job that prepared it (its commit key's) and the entries written since the last checkpoint. */
export interface RedisStreamTransaction extends SinkTransaction {
  entries: FlatEntry[];
}

/**
 * The key that holds the last checkpoint id a sink subtask committed for a job. The job
 * id stays the same across a restart from a checkpoint (only the attempt number
 * changes), and a transaction carries the id of the job that prepared it, so a
 * transaction committed after a crash, by a later attempt or a job restored from a
 * savepoint, is checked against the key it was meant for; another job's output never is.
 */
export function commitKey(sink: Sink, job: string, subtask: number): string {
  return `spillway:sink:${sink.name ?? sink.stream}:${job}:${subtask}`;
}

/**
 * `{ kind: 'redisStream', url, stream }`: each record an entry of the stream (XADD, the
 * id made by Redis), its fields the record's own (a string as it is, bytes as bytes,
 * anything else as JSON). Without checkpoints the entries are sent as they come, in
 * pipelined batches (at least once: a restarted task writes its records again). With
 * checkpoints, exactly once: the entries since a checkpoint are its transaction, written
 * when it completes in one MULTI/EXEC with the subtask's commit key (commitKey), WATCHed,
 * so that a commit of a checkpoint not newer than the one stored writes nothing.
 */
export const REDIS_STREAM_SINK: SinkSpec<Sink> = {
  kind: 'redisStream',
  validate(sink) {
    const url = urlProblem(sink.url, ['redis:', 'rediss:']);
    if (url !== undefined) return url;
    if (!isName(sink.stream)) return `needs a stream key, not ${JSON.stringify(sink.stream)}`;
    if (sink.name !== undefined && !isName(sink.name)) return `needs name as a non-empty string, not ${JSON.stringify(sink.name)}`;
    return countProblem('maxLen', sink.maxLen) ?? countProblem('batchSize', sink.batchSize) ?? msProblem('connectTimeout', sink.connectTimeout);
  },
  open: (sink, context) => openRedisStreamSink(sink, context),
};

/** A record as an entry's fields; refuses one that is no object of one field or more. */
export function entryFields(record: unknown): FlatEntry {
  if (record === null || typeof record !== 'object' || Array.isArray(record) || record instanceof Uint8Array) {
    throw new SpillwayError('SPW_ERR_SINK_RECORD', `${WHO} writes objects of fields, not ${describe(record)}`);
  }
  const flat: FlatEntry = [];
  for (const [field, value] of Object.entries(record)) {
    if (value === undefined) continue;
    flat.push(field, fieldValue(value));
  }
  if (flat.length === 0) throw new SpillwayError('SPW_ERR_SINK_RECORD', `${WHO} cannot write an entry of no field: ${JSON.stringify(record)}`);
  return flat;
}

/** An entry as ioredis takes it: its bytes as Buffers (a restored entry's may have come back as other views). */
function redisValues(entry: FlatEntry): (string | Buffer)[] {
  return entry.map((v) => (typeof v === 'string' || Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength)));
}

function fieldValue(value: unknown): string | Buffer {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value instanceof Date) return value.toISOString();
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

function describe(record: unknown): string {
  if (Array.isArray(record)) return 'an array';
  if (record instanceof Uint8Array) return 'bytes';
  return record === null ? 'null' : typeof record;
}

/**
 * Opens a subtask's writer. Only a writer of a job with checkpoints has the two-phase
 * hooks (prepareCommit, commit; the task commits what a restore hands it through them
 * before anything new); without, it writes through.
 */
export async function openRedisStreamSink(sink: Sink, context: SinkContext): Promise<SinkWriter> {
  const redis = await connectRedis(sink.url, { code: 'SPW_ERR_SINK_IO', who: WHO, connectTimeout: sink.connectTimeout });
  const writer = new RedisStreamWriter(redis, sink, context);
  if (context.checkpointed) return writer;
  if (!context.bounded) context.every(REDIS_FLUSH_INTERVAL_MS, () => writer.flush());
  return { push: (record) => writer.push(record), end: () => writer.end(), abort: () => writer.abort() };
}

class RedisStreamWriter extends TwoPhaseCommitSink<RedisStreamTransaction> {
  constructor(
    private readonly redis: Redis,
    private readonly sink: Sink,
    context: SinkContext,
  ) {
    super(context, sink.batchSize ?? DEFAULT_WRITE_BATCH);
  }

  protected beginTransaction(): RedisStreamTransaction {
    return { job: this.context.jobId, entries: [] };
  }

  protected invoke(transaction: RedisStreamTransaction, record: unknown): void {
    transaction.entries.push(entryFields(record));
  }

  protected size(transaction: RedisStreamTransaction): number {
    return transaction.entries.length;
  }

  /** Sends the entries in one pipeline. */
  protected async writeThrough(transaction: RedisStreamTransaction): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const entry of transaction.entries) pipeline.xadd(this.sink.stream, ...this.xaddHead(), ...redisValues(entry));
    this.checkReplies(await this.send(() => pipeline.exec()));
  }

  protected async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  protected disconnect(): void {
    this.redis.disconnect();
  }

  /**
   * Writes a transaction's entries and its checkpoint id in one MULTI/EXEC, unless the
   * subtask's commit key already holds that id or a later one (a retried commit: a
   * no-op). The key is WATCHed from its read to the EXEC: if another attempt of the
   * subtask commits meanwhile, EXEC does nothing and the key is read again.
   */
  protected async commitTransaction(checkpointId: number, transaction: RedisStreamTransaction): Promise<void> {
    const key = commitKey(this.sink, transaction.job, this.context.subtask);
    for (let attempt = 0; attempt < COMMIT_TRIES; attempt++) {
      const replies = await this.send(async () => {
        await this.redis.watch(key);
        const [stored, type] = await Promise.all([this.redis.get(key), this.redis.type(this.sink.stream)]);
        if (stored !== null && Number(stored) >= checkpointId) {
          await this.redis.unwatch();
          return 'committed' as const;
        }
        // Inside MULTI a command on a key of another type fails alone, the rest applied: refuse before.
        if (type !== 'stream' && type !== 'none') {
          await this.redis.unwatch();
          throw new SpillwayError('SPW_ERR_SINK_IO', `${WHO} cannot write to ${this.sink.stream} at ${redactUrl(this.sink.url)}: it holds a ${type}, not a stream`);
        }
        const multi = this.redis.multi();
        for (const entry of transaction.entries) multi.xadd(this.sink.stream, ...this.xaddHead(), ...redisValues(entry));
        multi.set(key, String(checkpointId));
        return multi.exec();
      });
      if (replies === 'committed') break;
      if (replies !== null) {
        this.checkReplies(replies);
        break;
      }
      if (attempt === COMMIT_TRIES - 1) {
        throw new SpillwayError('SPW_ERR_SINK_IO', `${WHO} could not commit checkpoint ${checkpointId} to ${this.sink.stream}: its commit key ${key} changed under every one of ${COMMIT_TRIES} tries`);
      }
    }
  }

  /** XADD's arguments before the fields: the trim, if any, and the id Redis makes. */
  private xaddHead(): (string | number)[] {
    return this.sink.maxLen === undefined ? ['*'] : ['MAXLEN', '~', this.sink.maxLen, '*'];
  }

  /** Runs a call to Redis, its failure a coded error naming the stream and the URL. */
  private async send<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw serviceError('SPW_ERR_SINK_IO', `${WHO} cannot write to ${this.sink.stream} at ${redactUrl(this.sink.url)}`, error);
    }
  }

  /** A pipeline's or transaction's replies: the first error among them fails the write. */
  private checkReplies(replies: [Error | null, unknown][] | null): void {
    const failed = replies?.find(([error]) => error !== null)?.[0];
    if (failed) throw serviceError('SPW_ERR_SINK_IO', `${WHO} cannot write to ${this.sink.stream} at ${redactUrl(this.sink.url)}`, failed);
  }
}

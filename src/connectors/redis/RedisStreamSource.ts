import type { Redis } from 'ioredis';
import type { SourceOf } from '../../job/JobDefinition.js';
import { countProblem, isName, msProblem, redactUrl, serviceError, urlProblem } from '../ServiceConnection.js';
import { forEachSplit, type HeldSplits, type SourceContext, type SourceSpec } from '../SourceSpec.js';
import { ListSupply } from '../ListSupply.js';
import type { SplitSupply } from '../SplitAssigner.js';
import { compareIds, connectRedis, isStreamId } from './RedisClient.js';
import type { RedisStreamEntry } from './RedisOptions.js';

/** Entries per read (XREAD COUNT) unless told `batchSize`. */
export const DEFAULT_READ_BATCH = 500;
/** How long an unbounded read waits for new entries (XREAD BLOCK) unless told `blockMs`, ms: what a cancel waits at most. */
export const DEFAULT_BLOCK_MS = 100;
/** How often an unbounded reader asks the JobManager for streams again after an empty answer, ms (a restarted subtask's go back). */
const ASK_INTERVAL_MS = 1000;

/**
 * A split: one stream, from the entry after `after`. Bounded, up to and with `until`,
 * the stream's last entry when the job started (fixed in the JobManager, at the first
 * split assignment); unbounded, without end.
 */
export interface RedisStreamSplit {
  stream: string;
  after: string;
  until?: string;
}

type Source = SourceOf<'redisStream'>;

const WHO = 'the Redis stream source';

/**
 * `{ kind: 'redisStream', url, streams, from, bounded }`: the entries of Redis streams
 * as `{ stream, id, fields }`, a stream a split, handed to the subtasks as they ask.
 * Bounded (the default), each stream up to its last entry when the job started; with
 * `bounded: false`, whatever arrives until the job is canceled (XREAD BLOCK, a short
 * wait at a time so that a cancel gets through). A reader's position is the last id it
 * read of each stream; a stream resumed from it reads the entries after it.
 */
export const REDIS_STREAM_SOURCE: SourceSpec<Source> = {
  kind: 'redisStream',
  validate(source) {
    const url = urlProblem(source.url, ['redis:', 'rediss:']);
    if (url !== undefined) return url;
    const streams = source.streams;
    const list = typeof streams === 'string' ? [streams] : streams;
    if (!Array.isArray(list) || list.length === 0 || list.some((s) => !isName(s))) {
      return `needs streams, a key or a list of keys, not ${JSON.stringify(streams)}`;
    }
    if (new Set(list).size !== list.length) return `names a stream twice in ${JSON.stringify(list)}`;
    const from = source.from;
    if (from !== undefined) {
      const ids = typeof from === 'string' ? [from] : from !== null && typeof from === 'object' ? Object.values(from) : [from];
      const bad = ids.find((id) => id !== '$' && !isStreamId(id));
      if (bad !== undefined) return `needs from as a stream id (<ms> or <ms>-<seq>), '$', or an object of them by stream, not ${JSON.stringify(bad)}`;
    }
    if (source.bounded !== undefined && typeof source.bounded !== 'boolean') return `bounded must be true or false, not ${JSON.stringify(source.bounded)}`;
    return countProblem('batchSize', source.batchSize) ?? msProblem('blockMs', source.blockMs) ?? msProblem('connectTimeout', source.connectTimeout);
  },
  bounded: (source) => source.bounded !== false,
  splits: (source) => redisStreamSupply(source),
  async read(source, context) {
    const blockMs = source.blockMs ?? DEFAULT_BLOCK_MS;
    const redis = await connectRedis(source.url, { code: 'SPW_ERR_SOURCE_IO', who: WHO, connectTimeout: source.connectTimeout, blockMs });
    const reader = new StreamReader(redis, source, context);
    try {
      if (source.bounded === false) await reader.readUnbounded(blockMs);
      else await forEachSplit<RedisStreamSplit>(context, (split, at) => reader.readBounded(split, at), resumeAfter);
    } finally {
      redis.disconnect();
    }
  },
  resume: (split, position) => resumeAfter(split as RedisStreamSplit, position),
};

/** What is left of a split once the entry `position` was read: the entries after it. */
function resumeAfter(split: RedisStreamSplit, position: unknown): RedisStreamSplit {
  return { ...split, after: position as string };
}

/** The streams a source names, in its order. */
function streamsOf(source: Source): string[] {
  return typeof source.streams === 'string' ? [source.streams] : [...source.streams];
}

/** Where a stream's reading starts: its own `from`, the source's one, or `'0'` (every entry). */
function fromOf(source: Source, stream: string): string {
  const from = source.from;
  if (from === undefined) return '0';
  return typeof from === 'string' ? from : (from[stream] ?? '0');
}

/**
 * In the JobManager, at the first ask: one split per stream, one an ask. Where the
 * source is bounded (or starts at `'$'`), the streams' last entry ids are read here,
 * once, so that every task and every restart reads to (or from) the same entry; a
 * bounded stream with nothing to read is no split at all.
 */
export async function redisStreamSupply(source: Source): Promise<SplitSupply<RedisStreamSplit>> {
  const streams = streamsOf(source);
  const bounded = source.bounded !== false;
  const last = bounded || streams.some((stream) => fromOf(source, stream) === '$') ? await lastIds(source, streams) : new Map<string, string | null>();
  const splits: RedisStreamSplit[] = [];
  for (const stream of streams) {
    const from = fromOf(source, stream);
    const top = last.get(stream) ?? null;
    const after = from === '$' ? (top ?? '0-0') : from;
    if (!bounded) splits.push({ stream, after });
    else if (top !== null && compareIds(top, after) > 0) splits.push({ stream, after, until: top });
  }
  return new ListSupply(splits);
}

/** Each stream's last entry id (null: empty or absent), read in one pipeline. */
async function lastIds(source: Source, streams: readonly string[]): Promise<Map<string, string | null>> {
  const redis = await connectRedis(source.url, { code: 'SPW_ERR_SOURCE_IO', who: WHO, connectTimeout: source.connectTimeout });
  try {
    const pipeline = redis.pipeline();
    for (const stream of streams) pipeline.xrevrange(stream, '+', '-', 'COUNT', 1);
    const replies = (await pipeline.exec()) ?? [];
    const last = new Map<string, string | null>();
    streams.forEach((stream, i) => {
      const [error, entries] = replies[i] ?? [null, []];
      if (error) throw serviceError('SPW_ERR_SOURCE_IO', `${WHO} cannot read stream ${stream} of Redis at ${redactUrl(source.url)}`, error);
      last.set(stream, (entries as [string, string[]][])[0]?.[0] ?? null);
    });
    return last;
  } catch (error) {
    throw serviceError('SPW_ERR_SOURCE_IO', `${WHO} cannot read the last entries of ${streams.join(', ')} from Redis at ${redactUrl(source.url)}`, error);
  } finally {
    redis.disconnect();
  }
}

/** An XREAD answer: per stream with entries, its key and its entries, each an id and the flat list of fields and values. */
type XReadReply = [stream: string, entries: [id: string, fields: string[]][]][] | null;

/** An entry as the source gives it. */
function entryOf(stream: string, id: string, flat: readonly string[]): RedisStreamEntry {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    // Own properties only: a field named __proto__ is a field like any other.
    if (flat[i] === '__proto__') Object.defineProperty(fields, '__proto__', { value: flat[i + 1], enumerable: true, writable: true, configurable: true });
    else fields[flat[i]] = flat[i + 1];
  }
  return { stream, id, fields };
}

/** One subtask's reading, over one connection. */
class StreamReader {
  private readonly batch: number;

  constructor(
    private readonly redis: Redis,
    private readonly source: Source,
    private readonly context: SourceContext,
  ) {
    this.batch = source.batchSize ?? DEFAULT_READ_BATCH;
  }

  /** XREAD of `args`, its failure a coded error naming the streams and the URL. */
  private async xread(args: (string | number)[], streams: readonly string[]): Promise<XReadReply> {
    try {
      return (await (this.redis.xread as (...a: (string | number)[]) => Promise<unknown>)(...args)) as XReadReply;
    } catch (error) {
      throw serviceError('SPW_ERR_SOURCE_IO', `${WHO} cannot read stream ${streams.join(', ')} from Redis at ${redactUrl(this.source.url)}`, error);
    }
  }

  /** Pushes the entries in order; resolves once the chain took them all. */
  private async pushAll(stream: string, entries: readonly [string, string[]][]): Promise<void> {
    for (const [id, flat] of entries) {
      const waiting = this.context.push(entryOf(stream, id, flat));
      if (waiting) await waiting;
    }
  }

  /** A bounded split: the stream's entries after `after` up to and with `until`, a batch at a time, its position marked after each. */
  async readBounded(split: RedisStreamSplit, at: (position: unknown) => void | Promise<void>): Promise<void> {
    const until = split.until!;
    let after = split.after;
    for (;;) {
      const reply = await this.xread(['COUNT', this.batch, 'STREAMS', split.stream, after], [split.stream]);
      const entries = reply?.[0]?.[1] ?? [];
      // Nothing after `after` (the stream was trimmed or deleted meanwhile): nothing more to read.
      if (entries.length === 0) return;
      const lastId = entries[entries.length - 1][0];
      if (compareIds(lastId, until) <= 0) {
        await this.pushAll(split.stream, entries);
        after = lastId;
      } else {
        // The read went past the bound: what arrived after the job started is not read.
        const within = entries.filter(([id]) => compareIds(id, until) <= 0);
        await this.pushAll(split.stream, within);
        return;
      }
      if (compareIds(after, until) >= 0) return;
      const marking = at(after);
      if (marking) await marking;
      await this.context.pause();
    }
  }

  /**
   * Unbounded: reads every stream it holds in one XREAD BLOCK, asking the JobManager
   * for more (one at a time, again every ASK_INTERVAL_MS after an empty answer), until
   * the task is canceled. Its position after each read: the splits it holds, each
   * resumed after its last entry read.
   */
  async readUnbounded(blockMs: number): Promise<void> {
    const { context } = this;
    const held: RedisStreamSplit[] = [];
    const arrived: RedisStreamSplit[] = [];
    let received = 0;
    let asking = false;
    let nextAsk = 0;
    let failed: { error: unknown } | undefined;
    const ask = (): void => {
      asking = true;
      context.nextSplits().then(
        (splits) => {
          received++;
          arrived.push(...(splits as RedisStreamSplit[]));
          nextAsk = splits.length > 0 ? 0 : Date.now() + ASK_INTERVAL_MS;
          asking = false;
        },
        (error: unknown) => void (failed ??= { error }),
      );
    };
    for (;;) {
      if (failed !== undefined) throw failed.error;
      held.push(...arrived.splice(0));
      if (!asking && Date.now() >= nextAsk) ask();
      // Built now, with `held` and `received` in step (no answer lands in between).
      const position: HeldSplits = { splits: held.map((split) => ({ ...split })), received };
      const marking = context.checkpointable(position);
      if (marking) await marking;
      if (held.length === 0) {
        await context.sleep(asking ? 20 : Math.max(1, nextAsk - Date.now()));
        continue;
      }
      const streams = held.map((split) => split.stream);
      const reply = await this.xread(['COUNT', this.batch, 'BLOCK', blockMs, 'STREAMS', ...streams, ...held.map((split) => split.after)], streams);
      for (const [stream, entries] of reply ?? []) {
        if (entries.length === 0) continue;
        await this.pushAll(stream, entries);
        held.find((split) => split.stream === stream)!.after = entries[entries.length - 1][0];
      }
      await context.pause();
    }
  }
}

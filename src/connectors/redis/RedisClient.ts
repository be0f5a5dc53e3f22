import type { Redis } from 'ioredis';
import type { ErrorCode } from '../../errors/Errors.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, redactUrl, serviceError, withTimeout } from '../ServiceConnection.js';

/** How long one command may wait for its answer beyond a blocking read's own wait, ms: a Redis that stops answering fails the task. */
export const REDIS_COMMAND_TIMEOUT_MS = 30_000;

/** Who connects (`the Redis stream source`), for errors; and how. */
export interface RedisConnectOptions {
  code: ErrorCode;
  who: string;
  connectTimeout?: number;
  /** The longest blocking read (XREAD BLOCK) the connection will make, ms. */
  blockMs?: number;
}

/**
 * An ioredis client, connected and ready. It never reconnects and queues no command
 * while it is not connected: a lost connection fails the command that meets it, and so
 * the task (whose restart strategy then applies). A Redis that refuses, or does not
 * answer within `connectTimeout`, is a coded error naming the URL.
 */
export async function connectRedis(url: string, options: RedisConnectOptions): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const connectTimeout = options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS + (options.blockMs ?? 0),
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  // An error also fails the command that meets it; kept here for a failed connect's message, which ioredis gives as "Connection is closed".
  let lastError: Error | undefined;
  redis.on('error', (error: Error) => void (lastError = error));
  const what = `${options.who} cannot connect to Redis at ${redactUrl(url)}`;
  try {
    await withTimeout(redis.connect(), connectTimeout, options.code, what, () => redis.disconnect());
  } catch (error) {
    redis.disconnect();
    throw serviceError(options.code, what, lastError ?? error);
  }
  return redis;
}

/** A Redis stream id as its two parts (`'5'` is `5-0`). */
function idParts(id: string): [bigint, bigint] {
  const dash = id.indexOf('-');
  return dash < 0 ? [BigInt(id), 0n] : [BigInt(id.slice(0, dash)), BigInt(id.slice(dash + 1))];
}

/** Orders two stream ids as Redis does: negative if `a` comes first, 0 if equal, positive if after. */
export function compareIds(a: string, b: string): number {
  const [ams, aseq] = idParts(a);
  const [bms, bseq] = idParts(b);
  if (ams !== bms) return ams < bms ? -1 : 1;
  return aseq === bseq ? 0 : aseq < bseq ? -1 : 1;
}

/** Whether `id` is a stream id a read may start after: `<ms>` or `<ms>-<seq>`. */
export function isStreamId(id: unknown): id is string {
  return typeof id === 'string' && /^\d{1,20}(-\d{1,20})?$/.test(id);
}

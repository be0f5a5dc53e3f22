import { SpillwayError, type ErrorCode } from '../errors/Errors.js';

/**
 * The checkpoint id an exactly-once sink task commits under once its input ended and all
 * it was given is written (what it prepared, then the rest): every later commit of the
 * same job's subtask is then a no-op.
 */
export const FINAL_CHECKPOINT = Number.MAX_SAFE_INTEGER;

/** How long a connector waits for its service (Redis, PostgreSQL) to connect and be ready, ms, unless told `connectTimeout`. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** A service's URL as an error may show it: the password, if any, replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@');
  }
}

/** What is wrong with a service URL of one of `protocols` (`redis:`, `postgres:`), as the end of a sentence; undefined if nothing. */
export function urlProblem(url: unknown, protocols: readonly string[]): string | undefined {
  if (typeof url !== 'string' || url === '') return `needs a url (${protocols[0]}//host:port/...)`;
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    return `needs a url of the form ${protocols[0]}//host:port/..., not ${JSON.stringify(redactUrl(url))}`;
  }
  return protocols.includes(protocol) ? undefined : `needs a url of ${protocols.join(' or ')}, not ${protocol}`;
}

/** A name a service's field takes (a table, a column, a stream key): a non-empty string. */
export const isName = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** A positive number of ms, or undefined; else what is wrong with it. */
export function msProblem(name: string, value: unknown): string | undefined {
  if (value === undefined || (typeof value === 'number' && Number.isFinite(value) && value > 0)) return undefined;
  return `needs ${name} as a positive number of ms, not ${JSON.stringify(value)}`;
}

/** A whole number of 1 or more, or undefined; else what is wrong with it. */
export function countProblem(name: string, value: unknown): string | undefined {
  if (value === undefined || (typeof value === 'number' && Number.isInteger(value) && value >= 1)) return undefined;
  return `needs ${name} as a whole number of 1 or more, not ${JSON.stringify(value)}`;
}

/**
 * Resolves as `promise` does, or rejects after `ms` with `code`, saying that `what` did
 * not answer in time (and runs `onTimeout`, which should close what hangs): a service
 * that accepts a connection and never answers must not hold a task forever.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, code: ErrorCode, what: string, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new SpillwayError(code, `${what} did not answer within ${ms} ms`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** `error` made a coded error of `code` whose message starts with `what` (a SpillwayError passes as it is). */
export function serviceError(code: ErrorCode, what: string, error: unknown): SpillwayError {
  if (error instanceof SpillwayError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const sqlState = (error as { code?: unknown } | null)?.code;
  const state = typeof sqlState === 'string' && /^[0-9A-Z]{5}$/.test(sqlState) ? ` (SQLSTATE ${sqlState})` : '';
  return new SpillwayError(code, `${what}: ${message}${state}`, { cause: error });
}

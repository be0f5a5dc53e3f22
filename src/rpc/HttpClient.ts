import { Agent, request, setGlobalDispatcher } from 'undici';
import { isErrorCode, SpillwayError, type ErrorCode } from '../errors/Errors.js';
import { pathOf, type Params, type Query, type Route } from './ControlPlane.js';

/** How long a control-plane call waits for an answer unless told otherwise. */
const CALL_TIMEOUT_MS = 30_000;
/** Redirects followed (from a standby JobManager to the leader) before the answer counts as an error. */
const MAX_REDIRECTS = 3;
/** How long `retrying` goes on unless told otherwise: a JobManager restarted within it loses nothing. */
const RETRY_TIMEOUT_MS = 60_000;

/**
 * What this process's control-plane calls carry: the cluster secret as bearer token,
 * and for https the CA that signed the servers' certificates (with this process's own
 * certificate, offered to servers that ask).
 */
export interface ClientCredentials {
  token?: string;
  tls?: { ca: Buffer; cert?: Buffer; key?: Buffer } | null;
}

let credentials: ClientCredentials = {};
/** Tokens of particular clusters (by the origin of their JobManager), over the process's own. */
const clusterTokens = new Map<string, string>();

/**
 * Sets the credentials of every later call of this process (callJson, the heartbeat).
 * Control-plane connections idle longer than 5 s close, whatever the server's
 * keep-alive: bursts of calls (deployments, reports) would otherwise hold sockets for
 * a minute or more.
 */
export function useClientCredentials(next: ClientCredentials): void {
  credentials = next;
  const tls = next.tls;
  setGlobalDispatcher(
    new Agent({
      keepAliveTimeout: 4000,
      keepAliveMaxTimeout: 5000,
      connect: tls ? { ca: tls.ca, cert: tls.cert, key: tls.key, minVersion: 'TLSv1.3' } : undefined,
    }),
  );
}

export function clientCredentials(): ClientCredentials {
  return credentials;
}

/** Calls to this JobManager (and only those) carry this token: a process that started a cluster is its client. */
export function useClusterToken(jobManagerUrl: string, token: string): void {
  clusterTokens.set(new URL(jobManagerUrl).origin, token);
}

/** The Authorization header of this process's calls (to `url`, if given), if it has a token. */
export function authorizationHeader(url?: string): Record<string, string> {
  const token = (url === undefined ? undefined : clusterTokens.get(new URL(url).origin)) ?? credentials.token;
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

/**
 * An HTTP answer that was not 2xx, with the server's `code` and `error` message
 * (its body is `{"code", "error"}`); `code` is SPW_ERR_CONTROL_CALL when the body
 * carries no catalogued one.
 */
export class HttpError extends SpillwayError {
  constructor(
    private readonly answerStatus: number,
    message: string,
    code: ErrorCode = 'SPW_ERR_CONTROL_CALL',
  ) {
    super(code, message);
    this.name = 'HttpError';
  }

  /** The answer's own status, which a proxy or another version may give other than the code's. */
  override get status(): number {
    return this.answerStatus;
  }
}

/** Control-plane call with a JSON (or raw) body and a JSON answer; throws HttpError on 4xx/5xx. */
export async function callJson<T>(
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  body?: unknown,
  options: { timeoutMs?: number; contentType?: string; headers?: Record<string, string>; redirects?: number } = {},
): Promise<T> {
  const raw = body instanceof Uint8Array || typeof body === 'string';
  // After a stretch of synchronous work the caller's pooled connection may have been closed by the
  // server (idle past its keep-alive) with the close not read yet: one turn of the loop reads it first,
  // instead of sending on a dead socket ("other side closed").
  await new Promise((resolve) => setImmediate(resolve));
  // An unreachable server keeps its cause but gets the control plane's code (an answer with an error is an HttpError).
  const response = await request(url, {
    method,
    headers: {
      ...authorizationHeader(url),
      ...options.headers,
      ...(body === undefined ? {} : { 'content-type': options.contentType ?? (raw ? 'application/octet-stream' : 'application/json') }),
    },
    body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
    headersTimeout: options.timeoutMs ?? CALL_TIMEOUT_MS,
    bodyTimeout: options.timeoutMs ?? CALL_TIMEOUT_MS,
  }).catch((error: unknown) => {
    throw new SpillwayError('SPW_ERR_CONTROL_CALL', `${method} ${url}: ${(error as Error).message}`, { cause: error });
  });
  const text = await response.body.text();
  // A standby JobManager sends every call but a few to the leader (307, method and body kept).
  const location = response.headers.location;
  if ((response.statusCode === 307 || response.statusCode === 308) && typeof location === 'string') {
    const redirects = options.redirects ?? MAX_REDIRECTS;
    if (redirects > 0) return callJson<T>(method, new URL(location, url).toString(), body, { ...options, redirects: redirects - 1 });
  }
  const parsed: unknown = text === '' ? {} : parseJson(text);
  if (response.statusCode >= 300) {
    const answer = parsed as { code?: unknown; error?: string };
    const message = answer.error ?? text;
    const code = isErrorCode(answer.code) ? answer.code : undefined;
    throw new HttpError(response.statusCode, `${method} ${url}: ${response.statusCode} ${message}`, code);
  }
  return parsed as T;
}

/**
 * A GET whose answer is newline-delimited JSON, read as it comes: `onLine` is called with
 * each line's value; resolves when the server ends the answer. No timeout on the body
 * (a followed job may be quiet for long); throws HttpError on 4xx/5xx.
 */
export async function streamLines(url: string, onLine: (value: unknown) => void): Promise<void> {
  const response = await request(url, { method: 'GET', headers: authorizationHeader(url), headersTimeout: CALL_TIMEOUT_MS, bodyTimeout: 0 }).catch((error: unknown) => {
    throw new SpillwayError('SPW_ERR_CONTROL_CALL', `GET ${url}: ${(error as Error).message}`, { cause: error });
  });
  if (response.statusCode >= 400) {
    const text = await response.body.text();
    const answer = (text === '' ? {} : parseJson(text)) as { code?: unknown; error?: string };
    throw new HttpError(response.statusCode, `GET ${url}: ${response.statusCode} ${answer.error ?? text}`, isErrorCode(answer.code) ? answer.code : undefined);
  }
  let rest = '';
  for await (const chunk of response.body) {
    const lines = (rest + (chunk as Buffer).toString('utf8')).split('\n');
    rest = lines.pop()!;
    for (const line of lines) if (line !== '') onLine(parseJson(line));
  }
  if (rest !== '') onLine(parseJson(rest));
}

/** What a call of a control-plane route sends: its path's parameters, its body and its query. */
export interface RouteCall<P, B, Q> {
  params: P;
  body?: B;
  query?: Q;
}

/** Calls `route` of the server at `base` (scheme, host, port and any path prefix); throws HttpError on 4xx/5xx. */
export function callRoute<P extends Params, B, R, Q extends Query>(
  base: string,
  route: Route<P, B, R, Q>,
  call: RouteCall<P, B, Q>,
  options: { timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<R> {
  const url = `${base}${pathOf(route, call.params, call.query)}`;
  return callJson<R>(route.method, url, call.body, { ...options, contentType: route.contentType });
}

export interface RetryOptions {
  /** Give up once the next attempt would start after this long. */
  timeoutMs?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Calls until it succeeds, with a doubling backoff, while the server is unreachable or
 * failing (no answer, 5xx); a refusal (4xx) is final. Throws the last error when it
 * gives up. Only for calls that are safe to repeat.
 */
export async function retrying<T>(call: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const { timeoutMs = RETRY_TIMEOUT_MS, initialBackoffMs = 100, maxBackoffMs = 2000 } = options;
  const deadline = Date.now() + timeoutMs;
  for (let backoff = initialBackoffMs; ; backoff = Math.min(backoff * 2, maxBackoffMs)) {
    try {
      return await call();
    } catch (error) {
      // A redirect not followed to its end is a leader change under way: no refusal.
      const refused = error instanceof HttpError && error.status < 500 && (error.status < 300 || error.status >= 400);
      if (refused || Date.now() + backoff > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, backoff));
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { error: text };
  }
}

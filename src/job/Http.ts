import { request } from 'undici';

/** An HTTP answer that was not 2xx, with the server's `error` message. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** Control-plane call with a JSON (or raw) body and a JSON answer; throws HttpError on 4xx/5xx. */
export async function callJson<T>(
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  body?: unknown,
  options: { timeoutMs?: number; contentType?: string } = {},
): Promise<T> {
  const raw = body instanceof Uint8Array || typeof body === 'string';
  const send = (): ReturnType<typeof request> =>
    request(url, {
      method,
      headers: body === undefined ? {} : { 'content-type': options.contentType ?? (raw ? 'application/octet-stream' : 'application/json') },
      body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
      headersTimeout: options.timeoutMs ?? 30_000,
      bodyTimeout: options.timeoutMs ?? 30_000,
    });
  // A kept-alive connection the server had closed (idle) while this process was too busy to
  // notice: the request went out on a dead connection, and goes once more on a new one.
  const response = await send().catch((error: Error & { code?: string }) => {
    if (error.code === 'UND_ERR_SOCKET' && error.message === 'other side closed') return send();
    throw error;
  });
  const text = await response.body.text();
  const parsed: unknown = text === '' ? {} : parseJson(text);
  if (response.statusCode >= 400) {
    const message = (parsed as { error?: string }).error ?? text;
    throw new HttpError(response.statusCode, `${method} ${url}: ${response.statusCode} ${message}`);
  }
  return parsed as T;
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
  const { timeoutMs = 60_000, initialBackoffMs = 100, maxBackoffMs = 2000 } = options;
  const deadline = Date.now() + timeoutMs;
  for (let backoff = initialBackoffMs; ; backoff = Math.min(backoff * 2, maxBackoffMs)) {
    try {
      return await call();
    } catch (error) {
      const refused = error instanceof HttpError && error.status < 500;
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

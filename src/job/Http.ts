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
  const response = await request(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': options.contentType ?? (raw ? 'application/octet-stream' : 'application/json') },
    body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
    headersTimeout: options.timeoutMs ?? 30_000,
    bodyTimeout: options.timeoutMs ?? 30_000,
  });
  const text = await response.body.text();
  const parsed: unknown = text === '' ? {} : parseJson(text);
  if (response.statusCode >= 400) {
    const message = (parsed as { error?: string }).error ?? text;
    throw new HttpError(response.statusCode, `${method} ${url}: ${response.statusCode} ${message}`);
  }
  return parsed as T;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { error: text };
  }
}

import bearerAuth from '@fastify/bearer-auth';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ClusterSecret } from './ClusterSecret.js';

/** Failed authentications one address may make in AUTH_FAILURE_WINDOW_MS before it is refused (429) for the rest of it. */
export const AUTH_FAILURE_LIMIT = 30;
export const AUTH_FAILURE_WINDOW_MS = 60_000;

/**
 * What needs no token: the health check, and the web UI's static files (the page
 * sends the token with its API calls). Everything else, including routes added
 * later (/metrics), is covered without asking.
 */
const PUBLIC_EXACT = new Set(['/healthz', '/', '/index.html', '/favicon.ico']);
const PUBLIC_PREFIXES = ['/ui/', '/assets/', '/static/'];

export function isPublicRequest(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const path = request.url.split('?', 1)[0];
  return PUBLIC_EXACT.has(path) || PUBLIC_PREFIXES.some((prefix) => path.startsWith(prefix));
}

export interface RestAuthOptions {
  failureLimit?: number;
  failureWindowMs?: number;
}

/**
 * Bearer authentication on every route of a server but the public ones: the token is
 * the cluster secret, compared in constant time (@fastify/bearer-auth). A refused
 * request gets 401 with WWW-Authenticate and a JSON error; an address that keeps
 * failing is refused with 429 for a while (@fastify/rate-limit counts failures only,
 * so a valid token is never limited). One root hook: it covers routes added later too.
 */
export function requireBearerAuth(http: FastifyInstance, secret: ClusterSecret, options: RestAuthOptions = {}): void {
  void http.register(bearerAuth, { keys: [secret.token], addHook: false, verifyErrorLogLevel: 'debug' });
  void http.register(rateLimit, { global: false });
  let countFailure: ReturnType<FastifyInstance['createRateLimit']> | null = null;
  http.addHook('onRequest', async (request, reply) => {
    if (isPublicRequest(request)) return;
    const failure = await new Promise<Error | undefined>((resolve) => http.verifyBearerAuth!(request, reply, (error?: Error) => resolve(error)));
    if (failure === undefined) return;
    countFailure ??= http.createRateLimit({
      max: options.failureLimit ?? AUTH_FAILURE_LIMIT,
      timeWindow: options.failureWindowMs ?? AUTH_FAILURE_WINDOW_MS,
    });
    await refuse(request, reply, failure, await countFailure(request));
  });
}

type FailureCount = Awaited<ReturnType<ReturnType<FastifyInstance['createRateLimit']>>>;

async function refuse(request: FastifyRequest, reply: FastifyReply, failure: Error, count: FailureCount): Promise<void> {
  if (!count.isAllowed && count.isExceeded) {
    await reply
      .code(429)
      .header('retry-after', String(count.ttlInSeconds))
      .send({ code: 'SPW_ERR_AUTH_RATE_LIMITED', error: `too many failed authentications from ${request.ip}; try again in ${count.ttlInSeconds} s` });
    return;
  }
  await reply
    .code(401)
    .header('www-authenticate', 'Bearer realm="spillway"')
    .send({ code: 'SPW_ERR_UNAUTHORIZED', error: `${failure.message}: send Authorization: Bearer <cluster secret>` });
}

import bearerAuth from '@fastify/bearer-auth';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ClusterSecret } from './ClusterSecret.js';

/** Failed authentications one address may make in AUTH_FAILURE_WINDOW_MS before it is refused (429) for the rest of it. */
export const AUTH_FAILURE_LIMIT = 30;
export const AUTH_FAILURE_WINDOW_MS = 60_000;

/**
 * What needs no token, by the route a request matched (never by its raw URL, which a
 * client can dress up): the health check, and the web UI's static files, which the
 * static plugin serves at `/` (`/*`) or under a prefix of its own (the page sends the
 * token with its API calls). Everything else, including routes added later
 * (/metrics) and URLs that match no route, is covered without asking.
 */
const PUBLIC_ROUTES = new Set(['/healthz', '/', '/*', '/index.html', '/favicon.ico']);
const PUBLIC_PREFIXES = ['/ui/', '/assets/', '/static/'];

function isPublic(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const route = request.routeOptions.url;
  return route !== undefined && (PUBLIC_ROUTES.has(route) || PUBLIC_PREFIXES.some((prefix) => route.startsWith(prefix)));
}

/**
 * Bearer authentication on every route of a server but the public ones: the token is
 * the cluster secret, compared in constant time (@fastify/bearer-auth). A refused
 * request gets 401 with WWW-Authenticate and a JSON error; an address that keeps
 * failing is refused with 429 for a while (@fastify/rate-limit counts failures only,
 * so a valid token is never limited). One root hook: it covers routes added later too.
 */
export function requireBearerAuth(http: FastifyInstance, secret: ClusterSecret): void {
  void http.register(bearerAuth, { keys: [secret.token], addHook: false, verifyErrorLogLevel: 'debug' });
  void http.register(rateLimit, { global: false });
  let countFailure: ReturnType<FastifyInstance['createRateLimit']> | null = null;
  http.addHook('onRequest', async (request, reply) => {
    if (isPublic(request)) return;
    const failure = await new Promise<Error | undefined>((resolve) => http.verifyBearerAuth!(request, reply, (error?: Error) => resolve(error)));
    if (failure === undefined) return;
    countFailure ??= http.createRateLimit({ max: AUTH_FAILURE_LIMIT, timeWindow: AUTH_FAILURE_WINDOW_MS });
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

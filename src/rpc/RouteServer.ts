import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Params, Query, Route } from './ControlPlane.js';

/** What a handler of a control-plane route is given, typed by its route. */
export interface RouteRequest<P, B, Q> {
  params: P;
  body: B;
  query: Q;
}

/**
 * A handler: resolves with the reply's body, or with `reply` after sending something
 * else itself (another status, an error).
 */
export type RouteHandler<P, B, R, Q> = (request: RouteRequest<P, B, Q>, reply: FastifyReply) => Promise<R | FastifyReply>;

/** Registers `handler` for `route` on `http`, validating the body with the route's schema; a success answers with the route's status. `bodyLimit`: bytes, instead of the server's. */
export function serve<P extends Params, B, R, Q extends Query>(http: FastifyInstance, route: Route<P, B, R, Q>, handler: RouteHandler<P, B, R, Q>, options: { bodyLimit?: number } = {}): void {
  http.route({
    ...options,
    method: route.method,
    url: route.path,
    ...(route.bodySchema ? { schema: { body: route.bodySchema } } : {}),
    // The route's types are what its schema (or its sender, the gateway of the same table) makes of the request.
    handler: (request, reply) => {
      if (route.status !== undefined) reply.code(route.status);
      return handler({ params: request.params as P, body: request.body as B, query: request.query as Q }, reply);
    },
  });
}

import type https from 'node:https';
import Fastify, { type FastifyHttpsOptions, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { TLS_MIN_VERSION } from '../network/networkThread/transport/TransportSecurity.js';
import type { ClusterSecret } from './ClusterSecret.js';
import { requireBearerAuth } from './RestAuth.js';
import type { TlsMaterial } from './TlsFiles.js';

export interface RestSecurity {
  /** Every route but the public ones wants `Authorization: Bearer <secret>`; none does without. */
  secret?: ClusterSecret | null;
  /** Served over https (TLS 1.3) with this certificate. */
  tls?: TlsMaterial | null;
}

/**
 * A REST server of the cluster (the JobManager's or a TaskManager's), secured as
 * configured, with `GET /healthz` (public) already routed. Routes added later are
 * covered by the authentication without asking.
 */
export function createRestServer(options: FastifyServerOptions, security: RestSecurity): FastifyInstance {
  const tls = security.tls;
  // An https instance has the API of an http one for everything Spillway uses; only the raw server type differs.
  const http = tls
    ? (Fastify({
        ...options,
        https: { cert: tls.cert, key: tls.key, ca: tls.ca, minVersion: TLS_MIN_VERSION },
      } as FastifyHttpsOptions<https.Server>) as unknown as FastifyInstance)
    : Fastify(options);
  if (security.secret) requireBearerAuth(http, security.secret);
  http.get('/healthz', async () => ({ status: 'ok' }));
  return http;
}

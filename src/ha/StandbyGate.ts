import type { FastifyInstance } from 'fastify';
import { errorBody } from '../errors/Errors.js';

/** What a standby answers itself: the cluster's view, health, metrics, and the UI's files. */
function answeredByAnyone(method: string, path: string): boolean {
  if (method !== 'GET') return false;
  return path === '/overview' || path === '/healthz' || path === '/metrics' || path === '/' || path === '/favicon.ico' || path.startsWith('/ui/');
}

/** Seconds a client waits before it asks again while no JobManager leads. */
const RETRY_AFTER_S = 1;

/** What the gate needs of the JobManager's leadership. */
export interface GateState {
  /** Whether this JobManager leads now, on its own clock. */
  leads(): boolean;
  /** Resolves once the leader has loaded the jobs of its predecessors: requests wait for it. */
  loaded(): Promise<void>;
  /** The leader's URL, if another leads and was seen renewing its lease lately. */
  leaderUrl(): string | undefined;
}

/**
 * The REST gate of a JobManager with HA. A standby answers GET /overview, /healthz and
 * /metrics itself and sends every other request to the leader (307, method and body
 * kept); with no leader known (none seen renewing for a few intervals: the leader may be
 * gone, and a client sent to it would meet a closed port), a 503 (SPW_ERR_NO_LEADER) with Retry-After. On the leader,
 * a request waits until the jobs of the leaders before it are loaded, so that a job
 * submitted during the change is numbered after them and a job asked for is found.
 */
export function standbyGate(http: FastifyInstance, state: GateState): void {
  http.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0];
    if (answeredByAnyone(request.method, path)) return;
    if (state.leads()) {
      await state.loaded();
      if (state.leads()) return;
    }
    const leader = state.leaderUrl();
    if (leader !== undefined) return reply.code(307).header('location', `${leader}${request.url}`).send();
    return reply
      .code(503)
      .header('retry-after', String(RETRY_AFTER_S))
      .send(errorBody({ code: 'SPW_ERR_NO_LEADER', message: 'no JobManager of the cluster leads now (a leader change is under way); try again shortly' }));
  });
}

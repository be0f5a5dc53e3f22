import type { FastifyInstance } from 'fastify';
import { SpillwayError } from '../../errors/Errors.js';
import { log } from '../../Logger.js';
import { JOBMANAGER_ROUTES as ROUTES } from '../../rpc/ControlPlane.js';
import { serve } from '../../rpc/RouteServer.js';
import type { JobManagerContext } from './JobManagerContext.js';

/** The control plane's routes of the JobManager (src/rpc/ControlPlane.ts, CONTROL.md): what TaskManagers send it. */
export async function internalRoutes(http: FastifyInstance, context: JobManagerContext): Promise<void> {
  const { registry } = context;
  serve(http, ROUTES.register, async ({ body }) => {
    const tm = registry.register(body);
    log.info({ taskManager: tm.id, host: tm.host, dataPort: tm.dataPort, slots: tm.slots }, 'taskmanager registered');
    context.scheduler().schedule();
    return { id: tm.id, session: context.session, modules: context.modules().hashes(), epoch: registry.fence.epoch };
  });
  // The answer names this JobManager's session and the modules it keeps (a TaskManager drops its copies of others).
  serve(http, ROUTES.heartbeat, async ({ params: { id }, body }) => {
    if (body?.session !== context.session) throw notFound(`taskmanager ${id} registered with an earlier JobManager; register again`);
    if (!registry.heartbeat(id)) throw notFound(`unknown taskmanager ${id}`);
    return { session: context.session, modules: context.modules().hashes() };
  });
  serve(http, ROUTES.deregister, async ({ params: { id }, query }) => {
    // An id of an earlier JobManager's session may now name another TaskManager.
    if (query.session !== context.session || !registry.deregister(id)) throw notFound(`unknown taskmanager ${id}`);
    return {};
  });
  serve(http, ROUTES.suspect, async ({ body: { host, dataPort, reason } }) => {
    const tm = registry.byDataAddress(host, dataPort);
    if (tm) registry.suspect(tm.id, reason);
    return {};
  });
  serve(http, ROUTES.counters, async ({ body }) => {
    for (const { taskId, counters, buffers } of body.tasks) context.scheduler().updateCounters(taskId, counters, buffers);
    return {};
  });
  serve(http, ROUTES.taskState, async ({ params, body }) => {
    context.scheduler().taskStateChanged(params.taskId, body);
    return {};
  });
  // A refusal (SplitRequestError: 409, SPW_ERR_SPLIT_REQUEST) fails the task with its message.
  serve(http, ROUTES.splits, async ({ params, body }) => ({ splits: await context.scheduler().nextSplits(params.taskId, body.attempt, body.request) }));
  serve(http, ROUTES.acknowledgeCheckpoint, async ({ params, body }) => {
    context.scheduler().acknowledgeCheckpoint(params.taskId, body.attempt, body.ack);
    return {};
  });
  serve(http, ROUTES.declineCheckpoint, async ({ params, body }) => {
    context.scheduler().declineCheckpoint(params.taskId, body.attempt, Number(params.id), body.error);
    return {};
  });
  serve(http, ROUTES.partitionReady, async ({ body }) => {
    context.scheduler().partitionReady(body.partitionId, body.location);
    return {};
  });
  serve(http, ROUTES.results, async ({ params, query, body }) => {
    if (!Buffer.isBuffer(body) || !isPackedArray(body)) {
      throw new SpillwayError('SPW_ERR_BAD_REQUEST', `the results of task ${params.taskId} must be one msgpack array (application/x-msgpack)`);
    }
    const origin = query.origin === undefined ? undefined : Number(query.origin);
    await context.scheduler().addResults(params.taskId, Number(query.attempt ?? 0), body, query.part === undefined ? 0 : Number(query.part), origin);
    return {};
  });
  debugRoutes(http);
}

/** Only in a process started with --expose-gc: a collection on demand, for tests that measure the heap. */
function debugRoutes(http: FastifyInstance): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') return;
  serve(http, ROUTES.collectGarbage, async () => {
    gc();
    const memory = process.memoryUsage();
    return { heapUsed: memory.heapUsed, heapTotal: memory.heapTotal, rss: memory.rss, external: memory.external };
  });
}

function notFound(message: string): SpillwayError {
  return new SpillwayError('SPW_ERR_TASKMANAGER_NOT_FOUND', message);
}

/** A msgpack array's first byte: fixarray, array 16 or array 32. */
function isPackedArray(body: Buffer): boolean {
  const first = body[0];
  return body.length > 0 && ((first >= 0x90 && first <= 0x9f) || first === 0xdc || first === 0xdd);
}

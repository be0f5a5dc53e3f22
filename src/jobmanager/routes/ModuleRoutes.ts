import type { FastifyInstance } from 'fastify';
import { SpillwayError } from '../../errors/Errors.js';
import { JOBMANAGER_ROUTES } from '../../rpc/ControlPlane.js';
import { serve } from '../../rpc/RouteServer.js';
import type { JobManagerContext } from './JobManagerContext.js';

/** Uploaded job modules: POST /modules (the source, as text), GET /modules/:hash (also how TaskManagers fetch them). */
export async function moduleRoutes(http: FastifyInstance, context: JobManagerContext): Promise<void> {
  http.post<{ Body: string }>('/modules', { bodyLimit: context.maxModuleBytes }, async (request, reply) => {
    if (typeof request.body !== 'string' || request.body.length === 0) throw new SpillwayError('SPW_ERR_MODULE', 'the module source is empty');
    return reply.code(201).send({ hash: await context.modules().upload(request.body) });
  });
  serve(http, JOBMANAGER_ROUTES.moduleSource, async ({ params: { hash } }) => {
    const source = context.modules().source(hash);
    if (source === undefined) throw new SpillwayError('SPW_ERR_MODULE_NOT_FOUND', `no module ${hash}`);
    return { source };
  });
}

import type { FastifyInstance } from 'fastify';
import { SpillwayError } from '../../errors/Errors.js';
import { REST_ROUTES as REST } from '../../rest/RestApi.js';
import { serve } from '../../rpc/RouteServer.js';
import type { JobManagerContext } from './JobManagerContext.js';

/** Uploaded job modules: POST /modules (the source, as text), GET /modules/:hash (also how TaskManagers fetch them). */
export async function moduleRoutes(http: FastifyInstance, context: JobManagerContext): Promise<void> {
  // A larger module is SPW_ERR_MODULE_TOO_LARGE (the JobManager's error handler).
  const limit = { bodyLimit: context.maxModuleBytes };
  serve(
    http,
    REST.uploadModule,
    async ({ body }) => {
      if (typeof body !== 'string' || body.length === 0) throw new SpillwayError('SPW_ERR_MODULE', 'the module source is empty');
      return { hash: await context.modules().upload(body) };
    },
    limit,
  );
  serve(http, REST.moduleSource, async ({ params: { hash } }) => {
    const source = context.modules().source(hash);
    if (source === undefined) throw new SpillwayError('SPW_ERR_MODULE_NOT_FOUND', `no module ${hash}`);
    return { source };
  });
}

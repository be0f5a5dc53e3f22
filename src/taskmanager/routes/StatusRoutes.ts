import type { FastifyInstance } from 'fastify';
import { TASKMANAGER_ROUTES as ROUTES } from '../../rpc/ControlPlane.js';
import { serve } from '../../rpc/RouteServer.js';
import type { TaskManagerContext } from './TaskManagerContext.js';

/** What the TaskManager holds (GET /status: also the JobManager's check of a suspect one) and its Prometheus series. */
export async function statusRoutes(http: FastifyInstance, context: TaskManagerContext): Promise<void> {
  serve(http, ROUTES.status, async () => context.status());
  serve(http, ROUTES.metrics, async (_request, reply) => reply.type(context.metrics.contentType).send(await context.metrics.text()));
}

import type { FastifyInstance } from 'fastify';
import { SpillwayError } from '../../errors/Errors.js';
import { BUILTIN_JOBS } from '../../job/BuiltinJobs.js';
import { JobState } from '../../lifecycle/JobState.js';
import { REST_ROUTES as REST } from '../../rest/RestApi.js';
import { serve } from '../../rpc/RouteServer.js';
import type { JobManagerContext } from './JobManagerContext.js';

/** The cluster as a whole: /overview, /taskmanagers, /metrics (src/rest/RestApi.ts). */
export async function clusterRoutes(http: FastifyInstance, context: JobManagerContext): Promise<void> {
  serve(http, REST.overview, async () => {
    const tms = context.registry.sorted();
    const jobs = context.jobs();
    const count = (state: JobState): number => jobs.filter((j) => j.state === state).length;
    return {
      taskmanagers: tms.length,
      slots: tms.reduce((s, t) => s + t.slots, 0),
      freeSlots: tms.reduce((s, t) => s + t.freeSlots, 0),
      jobs: Object.fromEntries(JobState.ALL.map((state) => [state.toLowerCase(), count(state)])),
      builtinJobs: Object.keys(BUILTIN_JOBS),
      ...context.leadership(),
    };
  });
  serve(http, REST.taskManagers, async () => ({ taskmanagers: context.registry.sorted() }));
  // A TaskManager as registered, with its memory and network buffers now (for the UI's charts).
  serve(http, REST.taskManager, async ({ params }) => {
    const tm = context.registry.get(params.id);
    if (!tm) throw new SpillwayError('SPW_ERR_TASKMANAGER_NOT_FOUND', `no taskmanager ${params.id}`);
    const status = await context.registry.gateway(tm).status().catch((error: Error) => ({ error: error.message }));
    return { ...tm, status };
  });
  serve(http, REST.metrics, async (_request, reply) => reply.type(context.metrics.contentType).send(await context.metrics.text()));
}

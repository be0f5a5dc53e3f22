import type { FastifyInstance } from 'fastify';
import path from 'node:path';
import { errorBody, SpillwayError } from '../../errors/Errors.js';
import { JobState } from '../../lifecycle/JobState.js';
import { REST_ROUTES as REST } from '../../rest/RestApi.js';
import { serve } from '../../rpc/RouteServer.js';
import { endedView } from '../checkpoint/CheckpointStats.js';
import { details, summary } from '../jobs/JobViews.js';
import type { JobManagerContext } from './JobManagerContext.js';
import { followResults } from './ResultFollower.js';

/** /jobs: submit, list, show, its exceptions, its result, its checkpoints and savepoints, cancel (src/rest/RestApi.ts). */
export async function jobRoutes(http: FastifyInstance, context: JobManagerContext): Promise<void> {
  serve(http, REST.submit, async ({ body }) => {
    const id = await context.submit(body);
    // Once answered, the job is known to a JobManager restarted after a crash.
    await context.history().committed();
    return { id };
  });
  serve(http, REST.jobs, async () => ({ jobs: context.jobs().map((job) => summary(job)) }));
  serve(http, REST.job, async ({ params }) => details(context.job(params.id)));
  serve(http, REST.exceptions, async ({ params }) => ({ exceptions: context.job(params.id).exceptions ?? [] }));
  serve(http, REST.result, async ({ params, query }, reply) => {
    const job = context.job(params.id);
    if (query.follow === 'true') {
      const stream = followResults(job, context, (stop) => reply.raw.once('close', stop));
      return reply.type('application/x-ndjson').send(stream);
    }
    if (job.state !== JobState.FINISHED) {
      return reply.code(409).send({ ...errorBody({ code: 'SPW_ERR_JOB_NOT_FINISHED', message: `job ${job.id} is ${job.state}, not FINISHED` }), state: job.state });
    }
    if (job.resultsDropped !== undefined) return reply.code(410).send({ ...errorBody({ code: 'SPW_ERR_RESULTS_DROPPED', message: job.resultsDropped }), state: job.state });
    return { id: job.id, records: context.history().results(job.seq) };
  });
  serve(http, REST.checkpoints, async ({ params }) => {
    const job = context.job(params.id);
    const live = context.scheduler().jobs.get(job.id)?.coordinator;
    if (live) return { id: job.id, ...live.view() };
    return { id: job.id, ...endedView(job.checkpoints, context.history().checkpointsOf(job.seq)) };
  });
  for (const [route, stop] of [[REST.savepoint, false], [REST.stop, true]] as const) {
    serve(http, route, async ({ params, body }, reply) => {
      const job = context.job(params.id);
      const live = context.scheduler().jobs.get(job.id);
      if (!live) return reply.code(409).send({ ...errorBody({ code: 'SPW_ERR_JOB_ENDED', message: `job ${job.id} is ${job.state} already` }), state: job.state });
      const id = context.scheduler().savepoint(live, path.resolve(body.directory), stop);
      return { id, location: `/jobs/${job.id}/savepoints/${id}` };
    });
  }
  serve(http, REST.savepointStatus, async ({ params }) => {
    const job = context.job(params.id);
    const id = Number(params.sid);
    const stats = context.scheduler().jobs.get(job.id)?.coordinator?.statsOf(id);
    if (stats?.savepoint) return { id, status: stats.status, path: stats.path, failure: stats.failure, triggered: stats.triggered, completed: stats.completed };
    const recorded = context.history().checkpointsOf(job.seq).find((c) => c.id === id && c.savepoint);
    if (recorded) return { id, status: 'COMPLETED', path: recorded.folder, triggered: recorded.triggered, completed: recorded.completed };
    const earlier = await context.savepointOfEarlierLeader(job.id, id);
    if (earlier) return { id, ...earlier };
    throw new SpillwayError('SPW_ERR_SAVEPOINT_NOT_FOUND', `job ${job.id} has no savepoint ${params.sid}`);
  });
  serve(http, REST.cancel, async ({ params }, reply) => {
    const job = context.job(params.id);
    const live = context.scheduler().jobs.get(job.id);
    if (!live || JobState.isTerminal(live.state)) {
      return reply.code(409).send({ ...errorBody({ code: 'SPW_ERR_JOB_ENDED', message: `job ${job.id} is ${job.state} already` }), state: job.state });
    }
    context.scheduler().cancel(live);
    await context.history().committed();
    return { id: live.id, state: live.state };
  });
}

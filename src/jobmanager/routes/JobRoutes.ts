import type { FastifyInstance } from 'fastify';
import path from 'node:path';
import { errorBody, SpillwayError } from '../../errors/Errors.js';
import { JobState } from '../../lifecycle/JobState.js';
import { endedView } from '../checkpoint/CheckpointStats.js';
import { details, summary } from '../jobs/JobViews.js';
import { submitSchema, type SubmitBody } from '../submission/JobSubmitter.js';
import type { JobManagerContext } from './JobManagerContext.js';
import { followResults } from './ResultFollower.js';

/** /jobs: submit, list, show, its exceptions, its result, cancel. */
export async function jobRoutes(http: FastifyInstance, context: JobManagerContext): Promise<void> {
  http.post<{ Body: SubmitBody }>('/jobs', { schema: { body: submitSchema } }, async (request, reply) => {
    const id = await context.submit(request.body);
    // Once answered, the job is known to a JobManager restarted after a crash.
    await context.history().committed();
    return reply.code(202).send({ id });
  });
  http.get('/jobs', async () => ({ jobs: context.jobs().map((job) => summary(job)) }));
  http.get<{ Params: { id: string } }>('/jobs/:id', async (request) => details(context.job(request.params.id)));
  http.get<{ Params: { id: string } }>('/jobs/:id/exceptions', async (request) => ({ exceptions: context.job(request.params.id).exceptions ?? [] }));
  http.get<{ Params: { id: string }; Querystring: { follow?: string } }>('/jobs/:id/result', async (request, reply) => {
    const job = context.job(request.params.id);
    if (request.query.follow === 'true') {
      const stream = followResults(job, context, (stop) => reply.raw.once('close', stop));
      return reply.type('application/x-ndjson').send(stream);
    }
    if (job.state !== JobState.FINISHED) {
      return reply.code(409).send({ ...errorBody({ code: 'SPW_ERR_JOB_NOT_FINISHED', message: `job ${job.id} is ${job.state}, not FINISHED` }), state: job.state });
    }
    if (job.resultsDropped !== undefined) return reply.code(410).send({ ...errorBody({ code: 'SPW_ERR_RESULTS_DROPPED', message: job.resultsDropped }), state: job.state });
    return { id: job.id, records: context.history().results(job.seq) };
  });
  http.get<{ Params: { id: string } }>('/jobs/:id/checkpoints', async (request) => {
    const job = context.job(request.params.id);
    const live = context.scheduler().jobs.get(job.id)?.coordinator;
    if (live) return { id: job.id, ...live.view() };
    return { id: job.id, ...endedView(job.checkpoints, context.history().checkpointsOf(job.seq)) };
  });
  const savepointBody = { schema: { body: { type: 'object', required: ['directory'], properties: { directory: { type: 'string', minLength: 1 } }, additionalProperties: false } } };
  for (const [route, stop] of [['/jobs/:id/savepoints', false], ['/jobs/:id/stop', true]] as const) {
    http.post<{ Params: { id: string }; Body: { directory: string } }>(route, savepointBody, async (request, reply) => {
      const job = context.job(request.params.id);
      const live = context.scheduler().jobs.get(job.id);
      if (!live) return reply.code(409).send({ ...errorBody({ code: 'SPW_ERR_JOB_ENDED', message: `job ${job.id} is ${job.state} already` }), state: job.state });
      const id = context.scheduler().savepoint(live, path.resolve(request.body.directory), stop);
      return reply.code(202).send({ id, location: `/jobs/${job.id}/savepoints/${id}` });
    });
  }
  http.get<{ Params: { id: string; sid: string } }>('/jobs/:id/savepoints/:sid', async (request) => {
    const job = context.job(request.params.id);
    const id = Number(request.params.sid);
    const stats = context.scheduler().jobs.get(job.id)?.coordinator?.statsOf(id);
    if (stats?.savepoint) return { id, status: stats.status, path: stats.path, failure: stats.failure, triggered: stats.triggered, completed: stats.completed };
    const recorded = context.history().checkpointsOf(job.seq).find((c) => c.id === id && c.savepoint);
    if (recorded) return { id, status: 'COMPLETED', path: recorded.folder, triggered: recorded.triggered, completed: recorded.completed };
    const earlier = await context.savepointOfEarlierLeader(job.id, id);
    if (earlier) return { id, ...earlier };
    throw new SpillwayError('SPW_ERR_SAVEPOINT_NOT_FOUND', `job ${job.id} has no savepoint ${request.params.sid}`);
  });
  http.post<{ Params: { id: string } }>('/jobs/:id/cancel', async (request, reply) => {
    const job = context.job(request.params.id);
    const live = context.scheduler().jobs.get(job.id);
    if (!live || JobState.isTerminal(live.state)) {
      return reply.code(409).send({ ...errorBody({ code: 'SPW_ERR_JOB_ENDED', message: `job ${job.id} is ${job.state} already` }), state: job.state });
    }
    context.scheduler().cancel(live);
    await context.history().committed();
    return { id: live.id, state: live.state };
  });
}

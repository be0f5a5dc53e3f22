import Fastify, { type FastifyInstance } from 'fastify';
import { pack } from 'msgpackr';
import { afterEach, expect, test } from 'vitest';
import { SpillwayError } from '../../src/errors/Errors.js';
import { TaskState } from '../../src/lifecycle/TaskState.js';
import { JOBMANAGER_ROUTES, pathOf, TASKMANAGER_ROUTES } from '../../src/rpc/ControlPlane.js';
import { HttpError } from '../../src/rpc/HttpClient.js';
import { JobManagerGateway } from '../../src/rpc/JobManagerGateway.js';
import { replyWithCodes } from '../../src/rpc/RestErrors.js';
import { serve } from '../../src/rpc/RouteServer.js';
import { TaskManagerGateway } from '../../src/rpc/TaskManagerGateway.js';
import type { TaskDeploymentMessage } from '../../src/rpc/TaskDeployment.js';

let http: FastifyInstance | null = null;

afterEach(async () => {
  await http?.close();
  http = null;
});

/** A server with the REST error replies of the cluster's; its port once listening. */
async function server(routes: (http: FastifyInstance) => void): Promise<number> {
  http = Fastify();
  http.addContentTypeParser('application/x-msgpack', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  replyWithCodes(http);
  routes(http);
  await http.listen({ host: '127.0.0.1', port: 0 });
  const address = http.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

const descriptor: TaskDeploymentMessage = {
  jobId: 'job-0001-x',
  taskId: 'job-0001-x.map.0',
  attempt: 1,
  stage: 'map',
  subtask: 0,
  parallelism: 1,
  jobParallelism: 1,
  job: { builtin: 'wordcount', params: {} },
  inputs: [],
  outputs: [],
  bufferTimeout: 10,
};

test('a route path fills in each parameter URI-encoded, and its query', () => {
  expect(pathOf(TASKMANAGER_ROUTES.cancelTask, { executionId: 'job-1.map.0#2' })).toBe('/tasks/job-1.map.0%232/cancel');
  expect(pathOf(JOBMANAGER_ROUTES.deregister, { id: 'tm-0001' }, { session: 'a b' })).toBe('/internal/taskmanagers/tm-0001?session=a+b');
});

test('the TaskManagerGateway reaches each handler registered from the same table, with its params and body', async () => {
  const seen: unknown[] = [];
  const port = await server((http) => {
    serve(http, TASKMANAGER_ROUTES.deployTask, async ({ body }, reply) => {
      seen.push(['deploy', body.taskId, body.attempt]);
      return reply.code(202).send({ taskId: body.taskId });
    });
    serve(http, TASKMANAGER_ROUTES.updatePartition, async ({ params, body }) => {
      seen.push(['partition', params.executionId, body.partitionId, body.location.dataPort]);
      return {};
    });
    serve(http, TASKMANAGER_ROUTES.cancelTask, async ({ params }) => {
      seen.push(['cancelTask', params.executionId]);
      return {};
    });
    serve(http, TASKMANAGER_ROUTES.cancelJob, async ({ params }) => {
      seen.push(['cancelJob', params.jobId]);
      return {};
    });
    serve(http, TASKMANAGER_ROUTES.releasePartitions, async ({ params, body }) => {
      seen.push(['release', params.jobId, body.partitions ?? 'all']);
      return {};
    });
  });
  const gateway = new TaskManagerGateway({ host: '127.0.0.1', httpPort: port });
  await gateway.deployTask(descriptor);
  await gateway.updatePartition('job-0001-x.map.0#1', 'job-0001-x/0/0/1', { taskManagerId: 'tm-0002', host: '127.0.0.1', dataPort: 7001 });
  await gateway.cancelTask('job-0001-x.map.0#1');
  await gateway.cancelJob('job-0001-x');
  await gateway.releasePartitions('job-0001-x', ['job-0001-x/0/0/1']);
  await gateway.releasePartitions('job-0001-x');
  expect(seen).toEqual([
    ['deploy', 'job-0001-x.map.0', 1],
    ['partition', 'job-0001-x.map.0#1', 'job-0001-x/0/0/1', 7001],
    ['cancelTask', 'job-0001-x.map.0#1'],
    ['cancelJob', 'job-0001-x'],
    ['release', 'job-0001-x', ['job-0001-x/0/0/1']],
    ['release', 'job-0001-x', 'all'],
  ]);
});

test('the JobManagerGateway carries task states with their coded error, results as msgpack, and a refusal keeps its code', async () => {
  const seen: unknown[] = [];
  const port = await server((http) => {
    serve(http, JOBMANAGER_ROUTES.taskState, async ({ params, body }) => {
      seen.push(['state', params.taskId, body.state, body.error, body.taskManagerId]);
      return {};
    });
    serve(http, JOBMANAGER_ROUTES.results, async ({ params, query, body }) => {
      seen.push(['results', params.taskId, query.attempt, [...body]]);
      return {};
    });
    serve(http, JOBMANAGER_ROUTES.splits, async ({ params, body }) => {
      if (body.attempt < 2) throw new SpillwayError('SPW_ERR_SPLIT_REQUEST', `task ${params.taskId} attempt ${body.attempt} is not running`);
      return { splits: [{ file: 'a.txt', start: 0, end: 10 }] };
    });
  });
  const gateway = new JobManagerGateway(`http://127.0.0.1:${port}/`);
  const error = { code: 'SPW_ERR_USER_CODE', message: 'always' } as const;
  await gateway.reportTaskState('job-0001-x.map.0', { state: TaskState.FAILED, attempt: 1, error }, 'tm-0001');
  const packed = pack([['a', 1]]);
  await gateway.sendResults('job-0001-x.out.0', 3, Buffer.from(packed));
  expect(seen).toEqual([
    ['state', 'job-0001-x.map.0', 'FAILED', error, 'tm-0001'],
    ['results', 'job-0001-x.out.0', '3', [...packed]],
  ]);
  expect(await gateway.nextSplits('job-0001-x.src.0', 2, 0)).toEqual([{ file: 'a.txt', start: 0, end: 10 }]);
  const refused = await gateway.nextSplits('job-0001-x.src.0', 1, 0).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(HttpError);
  expect((refused as HttpError).status).toBe(409);
  expect((refused as HttpError).code).toBe('SPW_ERR_SPLIT_REQUEST');
});

test('a body the route schema refuses and a route nobody serves answer with catalogued codes', async () => {
  const port = await server((http) => serve(http, JOBMANAGER_ROUTES.register, async () => ({ id: 'tm-0001', session: 's', modules: [] })));
  const gateway = new JobManagerGateway(`http://127.0.0.1:${port}`);
  const bad = await gateway.register({ host: 'h', dataPort: 1, httpPort: 1, slots: 0, memory: 1 }).catch((e: unknown) => e);
  expect(bad).toMatchObject({ status: 400, code: 'SPW_ERR_BAD_REQUEST' });
  const missing = await gateway.moduleSource('a'.repeat(64)).catch((e: unknown) => e);
  expect(missing).toMatchObject({ status: 404, code: 'SPW_ERR_NOT_FOUND' });
});

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { unpack } from 'msgpackr';
import { BUILTIN_JOBS, isBuiltinJob } from '../job/BuiltinJobs.js';
import { JobLoader } from '../job/JobLoader.js';
import type { JobDefinition } from '../job/JobDefinition.js';
import type { JobReference, PartitionLocation, TaskCounters, TaskState } from '../job/TaskDeployment.js';
import { listInputFiles } from '../job/TextSplits.js';
import { validateJob } from '../job/JobDefinition.js';
import type { PartitionType } from '../network/partition/ResultPartition.js';
import { DEFAULT_BUFFER_TIMEOUT } from '../network/writer/RecordWriter.js';
import { isTerminal, Scheduler, type Job } from './Scheduler.js';
import { TaskManagerRegistry, type Registration } from './TaskManagerRegistry.js';

export interface JobManagerOptions {
  host?: string;
  port?: number;
  heartbeatTimeoutMs?: number;
  /** How long a job waits for free slots before it fails. */
  slotTimeoutMs?: number;
  /** Ended jobs kept, with their results (default 100). */
  jobHistory?: number;
  /** Where uploaded job modules are kept. */
  dataDir?: string;
}

interface SubmitBody {
  job?: string;
  name?: string;
  module?: string;
  params?: Record<string, unknown>;
  parallelism?: number;
  exchange?: PartitionType;
  bufferTimeout?: number;
}

const submitSchema = {
  type: 'object',
  properties: {
    job: { type: 'string', minLength: 1 },
    module: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    name: { type: 'string' },
    params: { type: 'object' },
    parallelism: { type: 'integer', minimum: 1, maximum: 1024 },
    exchange: { type: 'string', enum: ['pipelined', 'blocking'] },
    bufferTimeout: { type: 'integer', minimum: -1 },
  },
  additionalProperties: false,
  anyOf: [{ required: ['job'] }, { required: ['module'] }],
} as const;

/**
 * The JobManager process: the REST API, the TaskManager registry, the scheduler and
 * the partition tracker. Control plane only: no record passes through it except the
 * results of a collect sink.
 */
export class JobManager {
  private readonly http: FastifyInstance;
  private readonly registry: TaskManagerRegistry;
  private readonly scheduler: Scheduler;
  private readonly modules = new Map<string, string>();
  private readonly loader: JobLoader;
  private readonly ticker: NodeJS.Timeout;
  private readonly dataDir: string;

  constructor(private readonly options: JobManagerOptions = {}) {
    this.registry = new TaskManagerRegistry(options.heartbeatTimeoutMs ?? 10_000, (tm, reason) => {
      console.error(`jobmanager: ${reason}`);
      this.scheduler.taskManagerLost(tm, reason);
    });
    this.scheduler = new Scheduler(this.registry, options.slotTimeoutMs, options.jobHistory);
    this.dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-jm-'));
    this.loader = new JobLoader(path.join(this.dataDir, 'modules'), async (hash) => {
      const source = this.modules.get(hash);
      if (source === undefined) throw new Error(`no module ${hash}`);
      return source;
    });
    this.ticker = setInterval(() => this.scheduler.schedule(), 1000);
    this.ticker.unref();
    // An unknown field (a typo such as "paralellism") is an error, not silently dropped.
    this.http = Fastify({ bodyLimit: 256 << 20, ajv: { customOptions: { removeAdditional: false } } });
    this.http.addContentTypeParser('application/x-msgpack', { parseAs: 'buffer' }, (_req, body, done) => {
      try {
        done(null, unpack(body as Buffer));
      } catch (error) {
        done(error as Error, undefined);
      }
    });
    this.http.addContentTypeParser(['text/javascript', 'application/octet-stream', 'text/plain'], { parseAs: 'string' }, (_req, body, done) =>
      done(null, body),
    );
    this.http.setErrorHandler((error: FastifyError, _request, reply) => {
      const status = error.statusCode ?? 500;
      reply.code(status).send({ error: error.message });
    });
    this.publicRoutes();
    this.internalRoutes();
  }

  async listen(): Promise<string> {
    return this.http.listen({ host: this.options.host ?? '127.0.0.1', port: this.options.port ?? 8081 });
  }

  async close(): Promise<void> {
    clearInterval(this.ticker);
    this.registry.close();
    await this.http.close();
    if (this.options.dataDir === undefined) fs.rmSync(this.dataDir, { recursive: true, force: true });
  }

  private publicRoutes(): void {
    const http = this.http;
    http.post<{ Body: SubmitBody }>('/jobs', { schema: { body: submitSchema } }, async (request, reply) => {
      const job = await this.submit(request.body);
      return reply.code(202).send({ id: job.id });
    });
    http.get('/jobs', async () => ({ jobs: [...this.scheduler.jobs.values()].map((job) => summary(job)) }));
    http.get<{ Params: { id: string } }>('/jobs/:id', async (request) => details(this.job(request.params.id)));
    http.get<{ Params: { id: string } }>('/jobs/:id/result', async (request, reply) => {
      const job = this.job(request.params.id);
      if (job.state !== 'FINISHED') return reply.code(409).send({ error: `job ${job.id} is ${job.state}, not FINISHED`, state: job.state });
      return { id: job.id, records: this.scheduler.results(job) };
    });
    http.post<{ Params: { id: string } }>('/jobs/:id/cancel', async (request, reply) => {
      const job = this.job(request.params.id);
      if (isTerminal(job.state)) return reply.code(409).send({ error: `job ${job.id} is ${job.state} already`, state: job.state });
      this.scheduler.cancel(job);
      return { id: job.id, state: job.state };
    });
    http.get('/overview', async () => {
      const tms = this.registry.sorted();
      const jobs = [...this.scheduler.jobs.values()];
      const count = (state: string): number => jobs.filter((j) => j.state === state).length;
      return {
        taskmanagers: tms.length,
        slots: tms.reduce((s, t) => s + t.slots, 0),
        freeSlots: tms.reduce((s, t) => s + t.freeSlots, 0),
        jobs: { created: count('CREATED'), running: count('RUNNING'), finished: count('FINISHED'), failed: count('FAILED'), canceled: count('CANCELED') },
        builtinJobs: Object.keys(BUILTIN_JOBS),
      };
    });
    http.get('/taskmanagers', async () => ({ taskmanagers: this.registry.sorted() }));
    http.post<{ Body: string }>('/modules', async (request, reply) => {
      if (typeof request.body !== 'string' || request.body.length === 0) return reply.code(400).send({ error: 'the module source is empty' });
      const hash = crypto.createHash('sha256').update(request.body).digest('hex');
      this.modules.set(hash, request.body);
      return reply.code(201).send({ hash });
    });
    http.get<{ Params: { hash: string } }>('/modules/:hash', async (request, reply) => {
      const source = this.modules.get(request.params.hash);
      if (source === undefined) return reply.code(404).send({ error: `no module ${request.params.hash}` });
      return { source };
    });
  }

  private internalRoutes(): void {
    const http = this.http;
    http.post<{ Body: Registration }>(
      '/internal/taskmanagers',
      {
        schema: {
          body: {
            type: 'object',
            required: ['host', 'dataPort', 'httpPort', 'slots', 'memory'],
            properties: {
              host: { type: 'string' },
              dataPort: { type: 'integer' },
              httpPort: { type: 'integer' },
              slots: { type: 'integer', minimum: 1 },
              memory: { type: 'integer', minimum: 1 },
            },
          },
        },
      },
      async (request) => {
        const tm = this.registry.register(request.body);
        this.scheduler.schedule();
        return { id: tm.id };
      },
    );
    http.post<{ Params: { id: string } }>('/internal/taskmanagers/:id/heartbeat', async (request, reply) => {
      if (!this.registry.heartbeat(request.params.id)) return reply.code(404).send({ error: `unknown taskmanager ${request.params.id}` });
      return {};
    });
    http.post<{ Body: { tasks: { taskId: string; counters: TaskCounters }[] } }>('/internal/taskmanagers/:id/counters', async (request) => {
      for (const { taskId, counters } of request.body.tasks) this.scheduler.updateCounters(taskId, counters);
      return {};
    });
    http.post<{ Params: { taskId: string }; Body: { state: TaskState; error?: string; counters?: TaskCounters } }>(
      '/internal/tasks/:taskId/state',
      async (request) => {
        const { state, error, counters } = request.body;
        this.scheduler.taskStateChanged(request.params.taskId, state, error, counters);
        return {};
      },
    );
    http.post<{ Body: { partitionId: string; location: PartitionLocation } }>('/internal/partitions/ready', async (request) => {
      this.scheduler.partitionReady(request.body.partitionId, request.body.location);
      return {};
    });
    http.post<{ Params: { taskId: string }; Body: unknown[] }>('/internal/tasks/:taskId/results', async (request) => {
      this.scheduler.addResults(request.params.taskId, request.body);
      return {};
    });
  }

  private async submit(body: SubmitBody): Promise<Job> {
    const params = body.params ?? {};
    const parallelism = body.parallelism ?? Math.max(1, this.registry.totalSlots);
    let ref: JobReference;
    if (body.module !== undefined) {
      if (!this.modules.has(body.module)) throw badRequest(`no uploaded module ${body.module}; POST it to /modules first`);
      ref = { module: body.module, params };
    } else {
      const name = body.job!;
      if (!isBuiltinJob(name)) throw badRequest(`unknown job "${name}"; the built-in jobs are ${Object.keys(BUILTIN_JOBS).join(', ')}`);
      ref = { builtin: name, params };
    }
    let definition: JobDefinition;
    try {
      definition = await this.loader.load(ref);
      validateJob(definition, parallelism);
      for (const stage of definition.stages) if (stage.source && 'text' in stage.source) listInputFiles(stage.source.text);
    } catch (error) {
      throw badRequest((error as Error).message);
    }
    return this.scheduler.submit({
      name: body.name ?? definition.name ?? body.job ?? 'job',
      definition,
      ref,
      parallelism,
      exchange: body.exchange ?? 'pipelined',
      bufferTimeout: body.bufferTimeout ?? DEFAULT_BUFFER_TIMEOUT,
    });
  }

  private job(id: string): Job {
    const job = this.scheduler.jobs.get(id);
    if (!job) throw Object.assign(new Error(`no job ${id}`), { statusCode: 404 });
    return job;
  }
}

function badRequest(message: string): Error {
  return Object.assign(new Error(message), { statusCode: 400 });
}

function totals(job: Job): TaskCounters {
  const sum: TaskCounters = { recordsIn: 0, bytesIn: 0, recordsOut: 0, bytesOut: 0 };
  for (const v of job.graph?.vertices.values() ?? []) {
    sum.recordsIn += v.counters.recordsIn;
    sum.bytesIn += v.counters.bytesIn;
    sum.recordsOut += v.counters.recordsOut;
    sum.bytesOut += v.counters.bytesOut;
  }
  return sum;
}

function summary(job: Job): Record<string, unknown> {
  const end = job.ended ?? Date.now();
  return {
    id: job.id,
    name: job.name,
    state: job.state,
    error: job.error,
    parallelism: job.parallelism,
    exchange: job.exchange,
    submitted: job.submitted,
    durationMs: job.started === undefined ? 0 : end - job.started,
  };
}

function details(job: Job): Record<string, unknown> {
  const vertices = [...(job.graph?.vertices.values() ?? [])];
  return {
    ...summary(job),
    started: job.started,
    ended: job.ended,
    counters: totals(job),
    tasks: vertices.map((v) => ({
      id: v.taskId,
      stage: v.stage,
      subtask: v.subtask,
      taskManager: v.taskManagerId,
      state: v.state,
      error: v.error,
      counters: v.counters,
    })),
    progress: vertices.length === 0 ? 0 : vertices.filter((v) => v.state === 'FINISHED').length / vertices.length,
  };
}

import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyError, FastifyInstance } from 'fastify';
import { BUILTIN_JOBS, isBuiltinJob } from '../job/BuiltinJobs.js';
import { callJson } from '../job/Http.js';
import { JobLoader } from '../job/JobLoader.js';
import type { JobDefinition } from '../job/JobDefinition.js';
import type { JobReference, PartitionLocation, TaskCounters, TaskStateReport } from '../job/TaskDeployment.js';
import { listInputFiles } from '../job/TextSplits.js';
import { validateJob } from '../job/JobDefinition.js';
import { type CompressionCodec, compressionCodec } from '../network/buffer/CompressionCodec.js';
import { hasPartitionType, partitionType, UnknownPartitionTypeError } from '../network/partition/PartitionTypes.js';
import type { TaskBufferStats } from '../network/thread/NetworkEnd.js';
import { DEFAULT_BUFFER_TIMEOUT } from '../network/writer/RecordWriter.js';
import { bindPolicy, type ClusterSecret } from '../security/ClusterSecret.js';
import { createRestServer } from '../security/RestServer.js';
import type { TlsMaterial } from '../security/TlsFiles.js';
import { JobHistory } from './JobHistory.js';
import { JobManagerMetrics } from './JobManagerMetrics.js';
import { JobStore, type JobRecord } from './JobStore.js';
import { details, jobSeq, snapshot, summary } from './JobViews.js';
import { DEFAULT_MODULE_LOAD_TIMEOUT_MS, loadInSandbox } from './ModuleSandbox.js';
import { DEFAULT_MODULE_TTL_MS, Modules } from './Modules.js';
import { DEFAULT_RESTART, restartSchema, restartStrategy, type RestartStrategy, type RestartStrategyName } from './RestartStrategy.js';
import { isTerminal, Scheduler, tmUrl, type Job } from './Scheduler.js';
import { TaskManagerRegistry, type Registration } from './TaskManagerRegistry.js';
import { httpLogging, log, logPolicy } from '../Logger.js';

export interface JobManagerOptions {
  host?: string;
  port?: number;
  heartbeatTimeoutMs?: number;
  /** How long a job waits for free slots before it fails. */
  slotTimeoutMs?: number;
  /** Ended jobs kept, with their results (default 100). */
  jobHistory?: number;
  /** Bytes of collected results kept for ended jobs, in the store (default 256 MiB). */
  historyBytes?: number;
  /** How long an uploaded module that no kept job runs stays after its last upload or use (default 1 hour). */
  moduleTtlMs?: number;
  /**
   * The durable state: job history, kept results, uploaded modules. By default
   * `spillway-jobmanager-<port>` under the OS temp dir, named after the port bound,
   * so that a JobManager restarted on the same port finds it.
   */
  dataDir?: string;
  /** How long an ended job's series stay in /metrics (default 5 minutes). */
  metricsRetentionMs?: number;
  /** A job's restart strategy unless it sets one (default fixed-delay, 3 attempts, 1000 ms). */
  restart?: RestartStrategy;
  /** How long a submitted module may take to load and define its job (default 10 s). */
  moduleLoadTimeoutMs?: number;
  /** The cluster secret: every route but /healthz wants it as bearer token. Without it only loopback is allowed. */
  secret?: ClusterSecret | null;
  /** Serve https with this certificate. */
  tls?: TlsMaterial | null;
  /** Allows a non-loopback host without a secret (with a warning). */
  insecure?: boolean;
  /** The largest module upload, bytes (default DEFAULT_MAX_MODULE_BYTES); larger is a 413. */
  maxModuleBytes?: number;
}

/** The web UI's files, copied next to the compiled code at build time (see scripts/build-ui.mjs). */
const UI_DIR = fileURLToPath(new URL('../../ui/', import.meta.url));

export const DEFAULT_JOB_HISTORY = 100;
/** --max-module-size: a job module is code, not data; 16 MiB is far above any real one. */
export const DEFAULT_MAX_MODULE_BYTES = 16 << 20;
export const DEFAULT_HISTORY_BYTES = 256 << 20;

/** The data dir of a JobManager listening on `port` that was given none. */
export function defaultDataDir(port: number): string {
  return path.join(os.tmpdir(), `spillway-jobmanager-${port}`);
}

interface SubmitBody {
  job?: string;
  name?: string;
  module?: string;
  params?: Record<string, unknown>;
  parallelism?: number;
  exchange?: string;
  compression?: boolean | string;
  bufferTimeout?: number;
  restart?: { strategy: RestartStrategyName } & Record<string, unknown>;
}

const submitSchema = {
  type: 'object',
  properties: {
    job: { type: 'string', minLength: 1 },
    module: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    name: { type: 'string' },
    params: { type: 'object' },
    parallelism: { type: 'integer', minimum: 1, maximum: 1024 },
    exchange: { type: 'string', minLength: 1 },
    // true, false or a codec's name: checked by compressionCodec(), whose message names the codecs.
    compression: {},
    bufferTimeout: { type: 'integer', minimum: -1 },
    restart: restartSchema,
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
  /** This JobManager process: TaskManagers that registered with an earlier one must register again. */
  readonly session = crypto.randomUUID();
  private readonly http: FastifyInstance;
  private readonly registry: TaskManagerRegistry;
  // Made by listen(), once the data dir (named after the port bound) is known; no request is served before.
  private store!: JobStore;
  private history!: JobHistory;
  private scheduler!: Scheduler;
  private modules!: Modules;
  private loader!: JobLoader;
  private ticker: NodeJS.Timeout | null = null;
  /** Modules being loaded for a submission, with how many loads of each are under way. */
  private readonly defining = new Map<string, number>();
  private opened: () => void = () => {};
  private readonly ready = new Promise<void>((resolve) => (this.opened = resolve));
  private dir = '';
  private readonly metrics: JobManagerMetrics;

  constructor(private readonly options: JobManagerOptions = {}) {
    this.registry = new TaskManagerRegistry(options.heartbeatTimeoutMs ?? 10_000, (tm, reason, stopped) => {
      log[stopped ? 'info' : 'warn']({ taskManager: tm.id }, reason);
      this.scheduler.taskManagerLost(tm, reason);
    });
    // An unknown field (a typo such as "paralellism") is an error, not silently dropped.
    // A client's idle connection closes after 5 s, not fastify's 72: bursts of TaskManager
    // reports and REST polls would otherwise hold descriptors for minutes.
    this.http = createRestServer(
      { bodyLimit: 256 << 20, keepAliveTimeout: 5000, ajv: { customOptions: { removeAdditional: false } }, ...httpLogging('jobmanager') },
      { secret: options.secret, tls: options.tls },
    );
    this.metrics = new JobManagerMetrics({ jobs: () => this.jobs(), taskManagers: () => this.registry.sorted() }, options.metricsRetentionMs);
    // The UI's files need no token (REST auth exempts /ui/ and /): the page sends it with its API calls.
    void this.http.register(fastifyStatic, { root: UI_DIR, prefix: '/ui/' });
    this.http.get('/', (_request, reply) => reply.sendFile('index.html'));
    this.http.addHook('onRequest', async () => this.ready);
    // Collected records stay packed as the TaskManager sent them: they go to the store as they are.
    this.http.addContentTypeParser('application/x-msgpack', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    this.http.addContentTypeParser(['text/javascript', 'application/octet-stream', 'text/plain'], { parseAs: 'string' }, (_req, body, done) =>
      done(null, body),
    );
    this.http.setErrorHandler((error: FastifyError, request, reply) => {
      const status = error.statusCode ?? 500;
      if (status === 413 && request.url === '/modules') {
        const limit = this.options.maxModuleBytes ?? DEFAULT_MAX_MODULE_BYTES;
        return reply.code(413).send({ code: error.code, error: `the module is larger than ${limit} bytes; the JobManager's --max-module-size allows no more` });
      }
      reply.code(status).send({ error: error.message });
    });
    this.publicRoutes();
    this.internalRoutes();
    this.debugRoutes();
  }

  /** Binds, opens the data dir and takes over what an earlier JobManager left there; returns the URL. */
  async listen(): Promise<string> {
    const host = this.options.host ?? '127.0.0.1';
    logPolicy(bindPolicy('jobmanager', host, this.options.secret ?? null, this.options.insecure ?? false));
    const url = await this.http.listen({ host, port: this.options.port ?? 8081 });
    const address = this.http.server.address();
    this.dir = this.options.dataDir ?? defaultDataDir(typeof address === 'object' && address ? address.port : 0);
    this.open(this.dir);
    this.opened();
    return url;
  }

  /** Where uploaded modules are written to be imported. */
  private get importsDir(): string {
    return path.join(this.dir, 'imports');
  }

  /** Where the durable state is (known once listening). */
  get dataDir(): string {
    return this.dir;
  }

  async close(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker);
    this.registry.close();
    this.modules?.close();
    await this.http.close();
    await this.store?.close();
  }

  private open(dir: string): void {
    this.store = JobStore.open(dir);
    this.history = new JobHistory(this.store, {
      jobs: this.options.jobHistory ?? DEFAULT_JOB_HISTORY,
      bytes: this.options.historyBytes ?? DEFAULT_HISTORY_BYTES,
    });
    this.history.recover();
    this.loader = new JobLoader(this.importsDir, async (hash) => {
      const source = this.modules.source(hash);
      if (source === undefined) throw new Error(`no module ${hash}`);
      return source;
    });
    // A kept job's module stays; so does one a live job runs (the history indexes live jobs too).
    this.modules = new Modules(this.store, this.loader, this.options.moduleTtlMs ?? DEFAULT_MODULE_TTL_MS, () => {
      const used = this.history.modulesInUse();
      for (const hash of this.defining.keys()) used.add(hash);
      return used;
    });
    this.scheduler = new Scheduler(this.registry, this.history, this.options.slotTimeoutMs, (job) => {
      if (job.ref.module !== undefined) this.modules.touch(job.ref.module);
    });
    this.ticker = setInterval(() => this.scheduler.schedule(), 1000);
    this.ticker.unref();
  }

  /** Only in a process started with --expose-gc: a collection on demand, for tests that measure the heap. */
  private debugRoutes(): void {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (typeof gc !== 'function') return;
    this.http.post('/internal/debug/gc', async () => {
      gc();
      const memory = process.memoryUsage();
      return { heapUsed: memory.heapUsed, heapTotal: memory.heapTotal, rss: memory.rss, external: memory.external };
    });
  }

  private publicRoutes(): void {
    const http = this.http;
    http.post<{ Body: SubmitBody }>('/jobs', { schema: { body: submitSchema } }, async (request, reply) => {
      const job = await this.submit(request.body);
      // Once answered, the job is known to a JobManager restarted after a crash.
      await this.history.committed();
      return reply.code(202).send({ id: job.id });
    });
    http.get('/jobs', async () => ({ jobs: this.jobs().map((job) => summary(job)) }));
    http.get<{ Params: { id: string } }>('/jobs/:id', async (request) => details(this.job(request.params.id)));
    http.get<{ Params: { id: string } }>('/jobs/:id/exceptions', async (request) => ({ exceptions: this.job(request.params.id).exceptions ?? [] }));
    http.get<{ Params: { id: string } }>('/jobs/:id/result', async (request, reply) => {
      const job = this.job(request.params.id);
      if (job.state !== 'FINISHED') return reply.code(409).send({ error: `job ${job.id} is ${job.state}, not FINISHED`, state: job.state });
      if (job.resultsDropped !== undefined) return reply.code(410).send({ error: job.resultsDropped, state: job.state });
      return { id: job.id, records: this.history.results(job.seq) };
    });
    http.post<{ Params: { id: string } }>('/jobs/:id/cancel', async (request, reply) => {
      const job = this.job(request.params.id);
      const live = this.scheduler.jobs.get(job.id);
      if (!live || isTerminal(live.state)) return reply.code(409).send({ error: `job ${job.id} is ${job.state} already`, state: job.state });
      this.scheduler.cancel(live);
      await this.history.committed();
      return { id: live.id, state: live.state };
    });
    http.get('/overview', async () => {
      const tms = this.registry.sorted();
      const jobs = this.jobs();
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
    // A TaskManager as registered, with its memory and network buffers now (for the UI's charts).
    http.get<{ Params: { id: string } }>('/taskmanagers/:id', async (request) => {
      const tm = this.registry.get(request.params.id);
      if (!tm) throw Object.assign(new Error(`no taskmanager ${request.params.id}`), { statusCode: 404 });
      const status = await callJson<Record<string, unknown>>('GET', `${tmUrl(tm)}/status`).catch((error: Error) => ({ error: error.message }));
      return { ...tm, status };
    });
    http.get('/metrics', async (_request, reply) => reply.type(this.metrics.contentType).send(await this.metrics.text()));
    http.post<{ Body: string }>('/modules', { bodyLimit: this.options.maxModuleBytes ?? DEFAULT_MAX_MODULE_BYTES }, async (request, reply) => {
      if (typeof request.body !== 'string' || request.body.length === 0) return reply.code(400).send({ error: 'the module source is empty' });
      return reply.code(201).send({ hash: await this.modules.upload(request.body) });
    });
    http.get<{ Params: { hash: string } }>('/modules/:hash', async (request, reply) => {
      const source = this.modules.source(request.params.hash);
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
              https: { type: 'boolean' },
            },
          },
        },
      },
      async (request) => {
        const tm = this.registry.register(request.body);
        log.info({ taskManager: tm.id, host: tm.host, dataPort: tm.dataPort, slots: tm.slots }, 'taskmanager registered');
        this.scheduler.schedule();
        return { id: tm.id, session: this.session, modules: this.modules.hashes() };
      },
    );
    // The answer names this JobManager's session and the modules it keeps (a TaskManager drops its copies of others).
    http.post<{ Params: { id: string }; Body: { session?: string } | undefined }>('/internal/taskmanagers/:id/heartbeat', async (request, reply) => {
      const { id } = request.params;
      if (request.body?.session !== this.session) {
        return reply.code(404).send({ error: `taskmanager ${id} registered with an earlier JobManager; register again` });
      }
      if (!this.registry.heartbeat(id)) return reply.code(404).send({ error: `unknown taskmanager ${id}` });
      return { session: this.session, modules: this.modules.hashes() };
    });
    http.delete<{ Params: { id: string }; Querystring: { session?: string } }>('/internal/taskmanagers/:id', async (request, reply) => {
      const { id } = request.params;
      // An id of an earlier JobManager's session may now name another TaskManager.
      if (request.query.session !== this.session || !this.registry.deregister(id)) return reply.code(404).send({ error: `unknown taskmanager ${id}` });
      return {};
    });
    http.post<{ Body: { host: string; dataPort: number; reason: string } }>('/internal/taskmanagers/suspect', async (request) => {
      const { host, dataPort, reason } = request.body;
      const tm = this.registry.byDataAddress(host, dataPort);
      if (tm) this.registry.suspect(tm.id, reason);
      return {};
    });
    http.post<{ Body: { tasks: { taskId: string; counters: TaskCounters; buffers?: TaskBufferStats }[] } }>('/internal/taskmanagers/:id/counters', async (request) => {
      for (const { taskId, counters, buffers } of request.body.tasks) this.scheduler.updateCounters(taskId, counters, buffers);
      return {};
    });
    http.post<{ Params: { taskId: string }; Body: TaskStateReport }>(
      '/internal/tasks/:taskId/state',
      async (request) => {
        this.scheduler.taskStateChanged(request.params.taskId, request.body);
        return {};
      },
    );
    // A text source's next splits for a task's attempt; a refusal (409) fails the task with its message.
    http.post<{ Params: { taskId: string }; Body: { attempt: number; request: number } }>(
      '/internal/tasks/:taskId/splits',
      {
        schema: {
          body: {
            type: 'object',
            required: ['attempt', 'request'],
            properties: { attempt: { type: 'integer', minimum: 0 }, request: { type: 'integer', minimum: 0 } },
          },
        },
      },
      async (request, reply) => {
        try {
          return { splits: this.scheduler.nextSplits(request.params.taskId, request.body.attempt, request.body.request) };
        } catch (error) {
          return reply.code(409).send({ error: (error as Error).message });
        }
      },
    );
    http.post<{ Body: { partitionId: string; location: PartitionLocation } }>('/internal/partitions/ready', async (request) => {
      this.scheduler.partitionReady(request.body.partitionId, request.body.location);
      return {};
    });
    http.post<{ Params: { taskId: string }; Querystring: { attempt?: string }; Body: Buffer }>('/internal/tasks/:taskId/results', async (request, reply) => {
      if (!Buffer.isBuffer(request.body) || !isPackedArray(request.body)) {
        return reply.code(400).send({ error: `the results of task ${request.params.taskId} must be one msgpack array (application/x-msgpack)` });
      }
      await this.scheduler.addResults(request.params.taskId, Number(request.query.attempt ?? 0), request.body);
      return {};
    });
  }

  private async submit(body: SubmitBody): Promise<Job> {
    const params = body.params ?? {};
    const parallelism = body.parallelism ?? Math.max(1, this.registry.totalSlots);
    let ref: JobReference;
    if (body.module !== undefined) {
      if (!this.modules.has(body.module)) throw badRequest(`no uploaded module ${body.module}; POST it to /modules first`);
      this.modules.touch(body.module);
      ref = { module: body.module, params };
    } else {
      const name = body.job!;
      if (!isBuiltinJob(name)) throw badRequest(`unknown job "${name}"; the built-in jobs are ${Object.keys(BUILTIN_JOBS).join(', ')}`);
      ref = { builtin: name, params };
    }
    let definition: JobDefinition;
    let restart: RestartStrategy;
    let compression: CompressionCodec | null;
    try {
      compression = compressionCodec(body.compression);
      restart = body.restart ? restartStrategy(body.restart, this.options.restart ?? DEFAULT_RESTART) : (this.options.restart ?? DEFAULT_RESTART);
      definition = await this.define(ref, parallelism);
      checkExchanges(definition, body.exchange);
    } catch (error) {
      throw badRequest((error as Error).message);
    }
    return this.scheduler.submit({
      name: body.name ?? definition.name ?? body.job ?? 'job',
      definition,
      ref,
      parallelism,
      exchange: partitionType(body.exchange ?? 'pipelined'),
      compression,
      bufferTimeout: body.bufferTimeout ?? DEFAULT_BUFFER_TIMEOUT,
      restart,
    });
  }

  /**
   * A job's definition, validated. A built-in's is made here; an uploaded module is
   * loaded in a sandbox thread with a time limit, so that its code cannot stop this one.
   */
  private async define(ref: JobReference, parallelism: number): Promise<JobDefinition> {
    if (ref.module === undefined) {
      const definition = await this.loader.load(ref);
      validateJob(definition, parallelism);
      for (const stage of definition.stages) if (stage.source && 'text' in stage.source) listInputFiles(stage.source.text);
      return definition;
    }
    const hash = ref.module;
    // A module being loaded is in use: the sweeper must not take its file away meanwhile.
    this.defining.set(hash, (this.defining.get(hash) ?? 0) + 1);
    try {
      await this.loader.prepare(ref);
      return await loadInSandbox({ dir: this.importsDir, ref, parallelism }, this.options.moduleLoadTimeoutMs ?? DEFAULT_MODULE_LOAD_TIMEOUT_MS);
    } finally {
      const left = this.defining.get(hash)! - 1;
      if (left === 0) this.defining.delete(hash);
      else this.defining.set(hash, left);
      this.modules.touch(hash);
    }
  }

  /** A live job as it stands, or a kept one as it ended. */
  private job(id: string): JobRecord {
    const live = this.scheduler.jobs.get(id);
    if (live) return snapshot(live);
    const seq = jobSeq(id);
    const kept = seq === undefined ? undefined : this.history.get(id, seq);
    if (!kept) throw Object.assign(new Error(`no job ${id}`), { statusCode: 404 });
    return kept;
  }

  /** Every job answered for, by number; live ones as they stand. */
  private jobs(): JobRecord[] {
    return this.history.list().map((record) => {
      const live = this.scheduler.jobs.get(record.id);
      return live ? snapshot(live) : record;
    });
  }
}

/** A msgpack array's first byte: fixarray, array 16 or array 32. */
function isPackedArray(body: Buffer): boolean {
  const first = body[0];
  return body.length > 0 && ((first >= 0x90 && first <= 0x9f) || first === 0xdc || first === 0xdd);
}

/** Every partition type the job names, as its default or on an edge, is one this JobManager knows. */
function checkExchanges(definition: JobDefinition, exchange: string | undefined): void {
  if (exchange !== undefined && !hasPartitionType(exchange)) throw new Error(`exchange: ${new UnknownPartitionTypeError(exchange).message}`);
  for (const stage of definition.stages) {
    for (const input of stage.inputs ?? []) {
      if (input.exchange === undefined || hasPartitionType(input.exchange)) continue;
      throw new Error(`stage "${stage.name}": the input from "${input.from}": ${new UnknownPartitionTypeError(input.exchange).message}`);
    }
  }
}

function badRequest(message: string): Error {
  return Object.assign(new Error(message), { statusCode: 400 });
}

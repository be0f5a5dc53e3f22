import crypto from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { SpillwayError } from '../errors/Errors.js';
import { JobLoader } from '../job/JobLoader.js';
import { replyWithCodes } from '../rpc/RestErrors.js';
import { bindPolicy } from '../security/ClusterSecret.js';
import { createRestServer } from '../security/RestServer.js';
import { JobHistory } from './store/JobHistory.js';
import { JobManagerMetrics } from './JobManagerMetrics.js';
import { JobStore, type JobRecord } from './store/JobStore.js';
import { JobSubmitter } from './submission/JobSubmitter.js';
import { jobSeq, snapshot } from './jobs/JobViews.js';
import { Modules } from './submission/Modules.js';
import {
  DEFAULT_HEARTBEAT_TIMEOUT_MS,
  DEFAULT_HISTORY_BYTES,
  DEFAULT_JOB_HISTORY,
  DEFAULT_MAX_MODULE_BYTES,
  DEFAULT_MODULE_LOAD_TIMEOUT_MS,
  DEFAULT_MODULE_TTL_MS,
  DEFAULT_SLOT_TIMEOUT_MS,
  defaultDataDir,
  type JobManagerOptions,
} from './JobManagerOptions.js';
import { DEFAULT_HOST, DEFAULT_JOBMANAGER_PORT } from '../ServerOptions.js';
import { clusterRoutes } from './routes/ClusterRoutes.js';
import { internalRoutes } from './routes/InternalRoutes.js';
import type { JobManagerContext } from './routes/JobManagerContext.js';
import { jobRoutes } from './routes/JobRoutes.js';
import { moduleRoutes } from './routes/ModuleRoutes.js';
import { sqlRoutes } from './routes/SqlRoutes.js';
import { Scheduler } from './scheduler/Scheduler.js';
import { TaskManagerRegistry } from './cluster/TaskManagerRegistry.js';
import { httpLogging, log, logPolicy } from '../Logger.js';

/** The web UI's files, copied next to the compiled code at build time (see scripts/build-ui.mjs). */
const UI_DIR = fileURLToPath(new URL('../../ui/', import.meta.url));

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
  private submitter!: JobSubmitter;
  private ticker: NodeJS.Timeout | null = null;
  private opened: () => void = () => {};
  private readonly ready = new Promise<void>((resolve) => (this.opened = resolve));
  private dir = '';
  private readonly metrics: JobManagerMetrics;

  constructor(private readonly options: JobManagerOptions = {}) {
    this.registry = new TaskManagerRegistry(options.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS, (tm, reason, stopped) => {
      log[stopped ? 'info' : 'warn']({ taskManager: tm.id }, reason);
      this.scheduler.taskManagerLost(tm, reason);
    });
    // An unknown field (a typo such as "paralellism") is an error, not silently dropped (submitSchema).
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
    const maxModuleBytes = this.options.maxModuleBytes ?? DEFAULT_MAX_MODULE_BYTES;
    replyWithCodes(this.http, (status, _error, url) =>
      status === 413 && url === '/modules'
        ? { code: 'SPW_ERR_MODULE_TOO_LARGE', message: `the module is larger than ${maxModuleBytes} bytes; the JobManager's --max-module-size allows no more` }
        : undefined,
    );
    const context = this.context(maxModuleBytes);
    void this.http.register(jobRoutes, context);
    void this.http.register(clusterRoutes, context);
    void this.http.register(moduleRoutes, context);
    void this.http.register(internalRoutes, context);
    void this.http.register(sqlRoutes, context);
  }

  /** Binds, opens the data dir and takes over what an earlier JobManager left there; returns the URL. */
  async listen(): Promise<string> {
    const host = this.options.host ?? DEFAULT_HOST;
    logPolicy(bindPolicy('jobmanager', host, this.options.secret ?? null, this.options.insecure ?? false));
    const url = await this.http.listen({ host, port: this.options.port ?? DEFAULT_JOBMANAGER_PORT });
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
    await this.submitter?.close();
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
      if (source === undefined) throw new SpillwayError('SPW_ERR_MODULE_NOT_FOUND', `no module ${hash}`);
      return source;
    });
    // A kept job's module stays; so does one a live job runs (the history indexes live jobs too).
    this.modules = new Modules(this.store, this.loader, this.options.moduleTtlMs ?? DEFAULT_MODULE_TTL_MS, () => {
      const used = this.history.modulesInUse();
      for (const hash of this.submitter.modulesInUse()) used.add(hash);
      return used;
    });
    this.scheduler = new Scheduler(this.registry, this.history, this.options.slotTimeoutMs ?? DEFAULT_SLOT_TIMEOUT_MS, (job) => {
      if (job.ref.module !== undefined) this.modules.touch(job.ref.module);
    });
    this.submitter = new JobSubmitter(this.modules, this.loader, {
      defaultParallelism: () => this.registry.totalSlots,
      restart: this.options.restart,
      importsDir: this.importsDir,
      moduleLoadTimeoutMs: this.options.moduleLoadTimeoutMs ?? DEFAULT_MODULE_LOAD_TIMEOUT_MS,
      checkpointDir: this.options.checkpointDir,
    });
    this.ticker = setInterval(() => this.scheduler.schedule(), 1000);
    this.ticker.unref();
  }

  /** What the route plugins serve from; the parts made by open() are read per request. */
  private context(maxModuleBytes: number): JobManagerContext {
    return {
      session: this.session,
      registry: this.registry,
      metrics: this.metrics,
      maxModuleBytes,
      history: () => this.history,
      scheduler: () => this.scheduler,
      modules: () => this.modules,
      submitter: () => this.submitter,
      job: (id) => this.job(id),
      jobs: () => this.jobs(),
      sqlCatalog: () => ({
        load: () => this.store.getCatalog(),
        save: async (snapshot) => {
          await this.store.putCatalog(snapshot);
        },
      }),
    };
  }

  /** A live job as it stands, or a kept one as it ended. */
  private job(id: string): JobRecord {
    const live = this.scheduler.jobs.get(id);
    if (live) return snapshot(live);
    const seq = jobSeq(id);
    const kept = seq === undefined ? undefined : this.history.get(id, seq);
    if (!kept) throw new SpillwayError('SPW_ERR_JOB_NOT_FOUND', `no job ${id}`);
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

import crypto from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { codeOf, SpillwayError } from '../errors/Errors.js';
import { EndedJobs } from '../ha/EndedJobs.js';
import { Fence } from '../ha/Fence.js';
import type { HaServices } from '../ha/HaServices.js';
import type { LeaderInfo } from '../ha/LeaderInfo.js';
import { pointerOf, resumedBody } from '../ha/JobRecovery.js';
import { NoHaServices } from '../ha/NoHaServices.js';
import { PostgresHaServices } from '../ha/PostgresHaServices.js';
import { standbyGate } from '../ha/StandbyGate.js';
import { JobState } from '../lifecycle/JobState.js';
import type { CheckpointMetadata } from './checkpoint/CheckpointMetadata.js';
import { jobIdFor, type Job } from './jobs/Job.js';
import { JobLoader } from '../job/JobLoader.js';
import { replyWithCodes } from '../rpc/RestErrors.js';
import { bindPolicy } from '../security/ClusterSecret.js';
import { createRestServer } from '../security/RestServer.js';
import { JobHistory } from './store/JobHistory.js';
import { JobManagerMetrics } from './JobManagerMetrics.js';
import { JobStore, type JobRecord } from './store/JobStore.js';
import { JobSubmitter } from './submission/JobSubmitter.js';
import type { SubmitBody } from './submission/SubmitBody.js';
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
import { REST_ROUTES } from '../rest/RestApi.js';
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
  /** This JobManager's leadership: always, without HA. */
  private readonly fence: Fence;
  private ha: HaServices = new NoHaServices();
  /** Resolves once this leader has loaded the jobs of the leaders before it. */
  private loaded: Promise<void> = Promise.resolve();
  /** With HA: the cluster's ended jobs, as the job result store has them (loaded when this JobManager takes the lead). */
  private readonly ended = new EndedJobs();
  /** The URL it is reached at; since when it leads (without HA, since it started). */
  private url = '';
  private readonly started = Date.now();

  constructor(private readonly options: JobManagerOptions = {}) {
    this.fence = options.ha ? new Fence() : Fence.always();
    this.registry = new TaskManagerRegistry(
      options.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS,
      (tm, reason, stopped) => {
        log[stopped ? 'info' : 'warn']({ taskManager: tm.id }, reason);
        this.scheduler.taskManagerLost(tm, reason);
      },
      this.fence,
    );
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
    if (options.ha) {
      standbyGate(this.http, {
        leads: () => this.fence.leads,
        loaded: () => this.loaded,
        leaderUrl: () => {
          const leader = this.ha.election?.liveLeader;
          return leader === undefined || leader.url === this.url ? undefined : leader.url;
        },
      });
    }
    // Collected records stay packed as the TaskManager sent them: they go to the store as they are.
    this.http.addContentTypeParser('application/x-msgpack', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    this.http.addContentTypeParser(['text/javascript', 'application/octet-stream', 'text/plain'], { parseAs: 'string' }, (_req, body, done) =>
      done(null, body),
    );
    const maxModuleBytes = this.options.maxModuleBytes ?? DEFAULT_MAX_MODULE_BYTES;
    replyWithCodes(this.http, (status, _error, url) =>
      status === 413 && url === REST_ROUTES.uploadModule.path
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
    this.url = this.options.ha?.advertiseUrl ?? url;
    this.open(this.dir);
    const ha = this.options.ha;
    if (ha) {
      const election = { holder: this.session, url: this.url, renewIntervalMs: ha.renewIntervalMs, leaseMs: ha.leaseMs };
      this.ha = await PostgresHaServices.create({ ...election, databaseUrl: ha.url, clusterId: ha.clusterId }, this.fence);
    }
    this.opened();
    this.ha.election?.start({ granted: (epoch) => this.lead(epoch), revoked: () => this.stepDown() });
    return url;
  }

  /**
   * This JobManager leads from now, at `epoch`: what an earlier leadership of its own
   * left is dropped, TaskManagers register afresh, and every job of the cluster without
   * a result runs on (JobRecovery): requests wait until they are loaded.
   */
  private lead(epoch: number): void {
    this.dropLeadership();
    this.loaded = this.recover(epoch).catch((error: Error) => log.error({ epoch, err: error }, 'the jobs of the earlier leaders could not be loaded'));
  }

  /** This JobManager leads no more: its jobs leave the heap untouched (the next leader runs them), and it answers as a standby. */
  private stepDown(): void {
    log.warn({ epoch: this.fence.epoch }, 'this JobManager no longer leads: its jobs go on under the next leader');
    this.dropLeadership();
  }

  private dropLeadership(): void {
    this.scheduler.suspend();
    this.registry.clear();
    this.scheduler = this.makeScheduler();
  }

  /** Loads every stored job that has no result, each from its latest checkpoint; one that cannot be is recorded FAILED with its reason. */
  private async recover(epoch: number): Promise<void> {
    await this.ended.load(this.ha, this.options.jobHistory ?? DEFAULT_JOB_HISTORY);
    const jobs = await this.ha.unfinishedJobs();
    log.info({ epoch, jobs: jobs.map((job) => job.id) }, 'leader: running on the jobs of the cluster');
    for (const stored of jobs) {
      if (this.fence.epoch !== epoch || !this.fence.leads) return;
      try {
        const body = (await resumedBody(this.ha, stored)) as SubmitBody;
        if (body.module !== undefined && !this.modules.has(body.module)) {
          const source = await this.ha.module(body.module);
          if (source !== undefined) await this.modules.upload(source);
        }
        const submission = { ...(await this.submitter.submission(body)), firstCheckpointId: firstCheckpointId(epoch), firstAttempt: firstAttempt(epoch) };
        this.scheduler.submit(submission, { seq: stored.seq, submitted: stored.submitted });
        log.info({ job: stored.id, from: body.savepoint }, 'leader: job resumed');
      } catch (error) {
        log.error({ job: stored.id, err: error }, 'leader: a job of the cluster cannot run on');
        const result = { jobId: stored.id, state: JobState.FAILED, ended: Date.now(), errorCode: codeOf(error, 'SPW_ERR_INVALID_JOB') };
        this.ended.add(result);
        await this.ha.putResult(epoch, result).catch(() => undefined);
      }
    }
  }

  /** POST /jobs: without HA as before; with it, numbered by the cluster and stored (module first) before it is queued here. */
  private async submit(body: SubmitBody): Promise<string> {
    const submission = await this.submitter.submission(body);
    if (this.ha.election === null) return this.scheduler.submit(submission).id;
    const epoch = this.fence.epoch;
    this.fence.check('submit a job');
    const seq = await this.ha.nextJobSeq();
    const submitted = Date.now();
    const id = jobIdFor(seq, submitted);
    if (body.module !== undefined) await this.ha.putModule(body.module, this.modules.source(body.module) ?? '');
    const checkpoints = submission.checkpoints && { ...body.checkpoints, directory: submission.checkpoints.directory };
    await this.ha.putJob(epoch, { id, seq, submitted, body: { ...body, parallelism: submission.parallelism, ...(checkpoints ? { checkpoints } : {}) } });
    // Stored: the job runs, here or (if this JobManager stopped leading meanwhile) under the next leader.
    if (this.fence.leads && this.fence.epoch === epoch) this.scheduler.submit({ ...submission, firstCheckpointId: firstCheckpointId(epoch), firstAttempt: firstAttempt(epoch) }, { seq, submitted });
    return id;
  }

  /** A job ended: the HA store records it, so that no later leader runs it again. */
  private recordEnd(job: Job): void {
    if (this.ha.election === null) return;
    const result = { jobId: job.id, state: job.state, ended: job.ended ?? Date.now(), errorCode: job.failure?.code, record: snapshot(job) };
    this.ended.add(result);
    this.ha.putResult(this.fence.epoch, result).catch((error: Error) => log.warn({ job: job.id, error: error.message }, 'the end of the job is not in the HA store'));
  }

  /** A checkpoint completes only once the HA store has it, at this leader's epoch. */
  private confirmCheckpoint(metadata: CheckpointMetadata): Promise<void> {
    return this.ha.addCheckpoint(this.fence.epoch, pointerOf(metadata));
  }

  private async savepointOfEarlierLeader(jobId: string, id: number): Promise<{ status: string; path?: string; failure?: string; code?: string } | undefined> {
    if (this.ha.election === null) return undefined;
    const recorded = (await this.ha.checkpoints(jobId)).find((pointer) => pointer.id === id && pointer.savepoint);
    if (recorded) return { status: 'COMPLETED', path: recorded.folder };
    if (id >= firstCheckpointId(this.fence.epoch)) return undefined;
    return { status: 'FAILED', code: 'SPW_ERR_LEADER_CHANGED', failure: `the leading JobManager changed while savepoint ${id} was under way: ask for it again` };
  }

  /** Who leads, as GET /overview shows it. */
  private leadership(): { role: 'leader' | 'standby'; leader: LeaderInfo | null } {
    if (this.ha.election === null) return { role: 'leader', leader: { url: this.url, epoch: 0, since: this.started } };
    return { role: this.fence.leads ? 'leader' : 'standby', leader: this.ha.election.leader ?? null };
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
    // A leader gives its lease up first: a standby takes over at once.
    await this.ha.close();
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
    this.scheduler = this.makeScheduler();
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

  /** A scheduler, with HA: its jobs' ends and checkpoints recorded in the HA store. */
  private makeScheduler(): Scheduler {
    const onEnded = (job: Job): void => {
      if (job.ref.module !== undefined) this.modules.touch(job.ref.module);
      this.recordEnd(job);
    };
    const confirm = this.options.ha ? (_job: Job, metadata: CheckpointMetadata) => this.confirmCheckpoint(metadata) : undefined;
    return new Scheduler(this.registry, this.history, this.options.slotTimeoutMs ?? DEFAULT_SLOT_TIMEOUT_MS, onEnded, confirm);
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
      submit: (body) => this.submit(body),
      leadership: () => this.leadership(),
      savepointOfEarlierLeader: (jobId, id) => this.savepointOfEarlierLeader(jobId, id),
    };
  }

  /** A live job as it stands, or a kept one as it ended. */
  private job(id: string): JobRecord {
    const live = this.scheduler.jobs.get(id);
    if (live) return snapshot(live);
    const seq = jobSeq(id);
    const kept = this.ended.resolve(id, seq === undefined ? undefined : this.history.get(id, seq));
    if (!kept) throw new SpillwayError('SPW_ERR_JOB_NOT_FOUND', `no job ${id}`);
    return kept;
  }

  /** Every job answered for, by number; live ones as they stand, ended ones as the cluster's result store has them. */
  private jobs(): JobRecord[] {
    const kept = this.history.list();
    const jobs = kept.map((record) => {
      const live = this.scheduler.jobs.get(record.id);
      return live ? snapshot(live) : (this.ended.resolve(record.id, record) ?? record);
    });
    jobs.push(...this.ended.missingFrom(new Set(kept.map((record) => record.id))));
    return jobs.sort((a, b) => a.seq - b.seq);
  }
}

/** The first checkpoint id of a leader at `epoch`: above every id of the leaders before it. */
function firstCheckpointId(epoch: number): number {
  return epoch * 2 ** 32 + 1;
}

/** The first attempt of a subtask a leader at `epoch` deploys: above every attempt of the leaders before it. */
function firstAttempt(epoch: number): number {
  return epoch * 2 ** 20;
}

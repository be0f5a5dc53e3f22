import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { codeOf, serializeError, SpillwayError, type SerializedError } from '../errors/Errors.js';
import { TaskState, type TaskEndState } from '../lifecycle/TaskState.js';
import type { Registration, TaskManagerStatus } from '../rpc/ControlPlane.js';
import { Heartbeat } from '../rpc/Heartbeat.js';
import { HttpError, retrying } from '../rpc/HttpClient.js';
import { JobManagerGateway } from '../rpc/JobManagerGateway.js';
import { EPOCH_HEADER } from '../rpc/TaskManagerGateway.js';
import { awaitLeader, findLeader, jobManagerUrls } from '../ha/LeaderFinder.js';
import { replyWithCodes } from '../rpc/RestErrors.js';
import { expandDeployment } from '../rpc/ConsumedPartitionGroup.js';
import { executionId, type PartitionLocation, type Split, type TaskDeploymentDescriptor, type TaskStateReport } from '../rpc/TaskDeployment.js';
import { ShuffleEnvironment } from '../network/networkThread/ShuffleEnvironment.js';
import { OPEN_KEY } from '../network/networkThread/transport/TransportSecurity.js';
import { bindPolicy, SECRET_ENV, type ClusterSecret } from '../security/ClusterSecret.js';
import { createRestServer } from '../security/RestServer.js';
import { JobLoader } from '../job/JobLoader.js';
import { ExpiringMap, ExpiringSet, JOB_MEMORY_MS } from './Expiring.js';
import { taskSpillDir, type ManagedMemorySpec } from '../runtime/memory/ManagedMemory.js';
import { DEFAULT_CANCEL_TIMEOUT_MS, DEFAULT_HEARTBEAT_INTERVAL_MS, DEFAULT_MANAGED_MEMORY, type TaskManagerOptions } from './TaskManagerOptions.js';
import { DEFAULT_HOST } from '../ServerOptions.js';
import { TaskHost, type TaskOutcome } from './TaskHost.js';
import { TaskManagerMetrics } from './TaskManagerMetrics.js';
import { TaskThreadPool } from './TaskThreadPool.js';
import { httpLogging, log, logPolicy } from '../Logger.js';
import { jobRoutes } from './routes/JobRoutes.js';
import { statusRoutes } from './routes/StatusRoutes.js';
import type { TaskManagerContext } from './routes/TaskManagerContext.js';
import { taskRoutes } from './routes/TaskRoutes.js';

/** The least managed memory a slot may have: below it a sort would spill every few records. */
const MIN_SLOT_MEMORY = 4096;

/** How long a stopping TaskManager waits for the JobManager to take its goodbye. */
const DEREGISTER_TIMEOUT_MS = 1000;

/** How long a TaskManager of several JobManagers waits at its start for one of them to lead. */
const FIND_LEADER_TIMEOUT_MS = 60_000;

/**
 * A worker process: registers with the JobManager and heartbeats, accepts task
 * deployments and cancellations over HTTP, runs each task in a thread of its own
 * over the shared network memory of its ShuffleEnvironment, and reports task
 * states and ready partitions back. Its main thread keeps HTTP, the data server
 * and the connections, as Flink's netty threads do.
 */
export class TaskManager {
  private readonly env: ShuffleEnvironment;
  private readonly http: FastifyInstance;
  private readonly threads: TaskThreadPool;
  /** Running tasks by execution id (task id and attempt). */
  private readonly tasks = new Map<string, TaskHost>();
  /** Jobs canceled here; a deployment of theirs that arrives late does not start. */
  private readonly canceledJobs = new ExpiringSet<string>(JOB_MEMORY_MS);
  /** Partition locations that arrived before their task was created. */
  private readonly earlyLocations = new ExpiringMap<string, [string, PartitionLocation][]>(JOB_MEMORY_MS);
  private readonly loader: JobLoader;
  private id = '';
  private session = '';
  private heartbeat: Heartbeat | null = null;
  private metrics: NodeJS.Timeout | null = null;
  private readonly jm: JobManagerGateway;
  private registration: Registration | null = null;
  private rejoining = false;
  /** The JobManagers of the cluster (--jobmanager URL1,URL2): the leader is found among them. */
  private readonly jobManagers: string[];
  /** The newest leader epoch seen: messages of older ones are refused, tasks deployed under them are stopped. */
  private epoch = 0;
  /** Tasks of an older leader being stopped: a deployment of the new one waits for them. */
  private fencing: Promise<void> = Promise.resolve();
  private relocating = false;
  private readonly partitionDir: string;
  private readonly metricsRegistry: TaskManagerMetrics;
  /** Where tasks' operators spill, a folder per task. */
  private readonly managedDir: string;

  constructor(private readonly options: TaskManagerOptions) {
    if (this.managedMemory < options.slots * MIN_SLOT_MEMORY) {
      throw new SpillwayError('SPW_ERR_INSUFFICIENT_MANAGED_MEMORY', `--managed-memory ${options.managedMemory} is below ${MIN_SLOT_MEMORY} bytes a slot (${options.slots} slots): give it at least ${options.slots * MIN_SLOT_MEMORY}`);
    }
    this.jobManagers = jobManagerUrls(options.jobManager);
    this.jm = new JobManagerGateway(this.jobManagers[0]);
    this.partitionDir = path.join(options.spillDir, 'partitions');
    this.managedDir = path.join(options.spillDir, 'managed');
    this.env = new ShuffleEnvironment({
      memory: options.memory,
      segmentSize: options.segmentSize,
      host: options.host,
      advertiseHost: advertisedHost(options),
      spillDir: this.partitionDir,
      log: (message) => log.warn({ taskManager: this.id }, message),
      onConnection: (event, direction, peer) => log.debug({ taskManager: this.id, peer, direction }, `data connection ${event}`),
      onPeerLost: (remote, error) => this.reportPeerLost(remote.host, remote.port, error),
      security: { key: options.secret?.dataKey() ?? OPEN_KEY, tls: options.tls },
    });
    const modulesDir = path.join(options.spillDir, 'modules');
    this.loader = new JobLoader(modulesDir, (hash) => this.jm.moduleSource(hash));
    this.threads = new TaskThreadPool({ shared: this.env.buffers.arena.shared, modulesDir, keepIdle: options.slots * 2, taskHeapBytes: options.taskHeapBytes });
    this.metricsRegistry = new TaskManagerMetrics(this.env, () => this.tasks.values(), options.metricsRetentionMs);
    this.http = createRestServer({ bodyLimit: 64 << 20, ...httpLogging('taskmanager') }, { secret: options.secret, tls: options.tls });
    replyWithCodes(this.http);
    this.routes();
  }

  get taskManagerId(): string {
    return this.id;
  }

  get managedMemory(): number {
    return this.options.managedMemory ?? DEFAULT_MANAGED_MEMORY;
  }

  async start(): Promise<void> {
    const host = this.options.host ?? DEFAULT_HOST;
    logPolicy(bindPolicy('taskmanager', host, this.options.secret ?? null, this.options.insecure ?? false));
    // A TaskManager killed on this folder could not clean it: what it left belongs to no one now.
    // Only this process's own subfolders go; the folder itself may be shared with anything.
    fs.rmSync(this.partitionDir, { recursive: true, force: true });
    fs.rmSync(path.join(this.options.spillDir, 'modules'), { recursive: true, force: true });
    fs.mkdirSync(this.options.spillDir, { recursive: true });
    // Spill files of a TaskManager that was killed on this spill dir belong to no task now.
    fs.rmSync(this.managedDir, { recursive: true, force: true });
    const data = await this.env.start();
    await this.http.listen({ host, port: 0 });
    const address = this.http.server.address();
    const httpPort = typeof address === 'object' && address ? address.port : 0;
    this.registration = { host: data.host, dataPort: data.port, httpPort, https: Boolean(this.options.tls), slots: this.options.slots, memory: this.options.memory };
    if (this.jobManagers.length > 1) {
      const leader = await awaitLeader(this.jobManagers, FIND_LEADER_TIMEOUT_MS);
      if (leader === undefined) throw new SpillwayError('SPW_ERR_NO_LEADER', `none of the JobManagers ${this.jobManagers.join(', ')} leads`);
      this.jm.moveTo(leader.url);
    }
    await this.register();
    this.heartbeat = new Heartbeat(this.jm.url, { id: this.id, session: this.session }, this.options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS, {
      // A 404 for an id this TaskManager has already left behind needs nothing.
      lost: (id) => id === this.id && void this.rejoin(),
      failed: (message) => {
        log.warn({ taskManager: this.id }, `heartbeat failed: ${message}`);
        // The leader may have changed: the heartbeats go to a dead or stepped-down one.
        if (this.highlyAvailable) void this.relocate();
      },
      unauthorized: (message) => this.unauthorized(this.refused(`this TaskManager's heartbeat: ${message};`)),
      // Copies of modules the JobManager no longer keeps are dropped here too.
      keptModules: (modules, asOf) => this.loader.keepOnly(modules, asOf),
    });
    this.metrics = setInterval(() => this.sendCounters(), this.options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS);
    this.metrics.unref();
  }

  /** Stops within the cancel timeout (plus the time to close sockets), whatever the tasks are doing. */
  async stop(): Promise<void> {
    if (this.metrics) clearInterval(this.metrics);
    try {
      await this.heartbeat?.close();
      await this.deregister();
      const tasks = [...this.tasks.values()];
      for (const task of tasks) task.cancel();
      await Promise.all(tasks.map((task) => task.whenEnded()));
      await this.threads.close();
      await this.http.close();
      await this.env.close();
    } finally {
      if (this.options.ownsSpillDir) fs.rmSync(this.options.spillDir, { recursive: true, force: true });
    }
  }

  /**
   * Tells the JobManager this TaskManager stops, before its data server closes: peers
   * that see their connections to it close then report nobody lost. A JobManager that is
   * gone or slow does not hold the stop up for long.
   */
  private async deregister(): Promise<void> {
    if (this.id === '') return;
    await this.jm.deregister(this.id, this.session, DEREGISTER_TIMEOUT_MS).catch(() => {});
  }

  /** Several JobManagers, or a leader with an epoch: the leader may change. */
  private get highlyAvailable(): boolean {
    return this.jobManagers.length > 1 || this.epoch > 0;
  }

  private async register(): Promise<void> {
    try {
      const answer = await this.jm.register(this.registration!);
      ({ id: this.id, session: this.session } = answer);
      this.seeEpoch(answer.epoch ?? 0);
    } catch (error) {
      if (error instanceof HttpError && error.status === 401) {
        throw this.refused('this TaskManager (401):');
      }
      throw error;
    }
  }

  /** The JobManager refused `what` (this TaskManager's registration, its heartbeat), and why as far as this TaskManager can tell. */
  private refused(what: string): SpillwayError {
    return new SpillwayError('SPW_ERR_UNAUTHORIZED', `the JobManager ${this.jm.url} refused ${what} ${credentialsHint(this.options.secret ?? null)}`);
  }

  /** Refused credentials do not get better by retrying: say why and stop. */
  private unauthorized(error: Error): void {
    const report = this.options.onUnauthorized ?? ((e: Error) => console.error(`taskmanager: ${e.message}`));
    report(error);
  }

  /**
   * The JobManager declared this TaskManager lost (it failed the jobs that ran here):
   * stop what still runs, drop every partition, and register afresh with empty slots.
   */
  private async rejoin(): Promise<void> {
    if (this.rejoining) return;
    this.rejoining = true;
    try {
      if (this.highlyAvailable) {
        const leader = await findLeader(this.jobManagers);
        if (leader !== undefined) this.jm.moveTo(leader.url);
      }
      for (const task of this.tasks.values()) task.cancel();
      this.env.partitions.releaseWhere(() => true, new SpillwayError('SPW_ERR_PARTITION_RELEASED', `taskmanager ${this.id} was declared lost`));
      await this.register();
      this.heartbeat?.setId({ id: this.id, session: this.session }, this.jm.url);
      log.info({ taskManager: this.id }, 'taskmanager registered again');
    } catch (error) {
      if (codeOf(error) === 'SPW_ERR_UNAUTHORIZED') this.unauthorized(error as Error);
      else log.error({ taskManager: this.id, err: error }, 'could not register again');
    } finally {
      this.rejoining = false;
    }
  }

  /**
   * Finds the leader among the JobManagers after a heartbeat failed; one that is not the
   * JobManager this TaskManager is registered with, or leads at a newer epoch, gets its
   * registration (the tasks of an older leader stop: seeEpoch).
   */
  private async relocate(): Promise<void> {
    if (this.relocating || this.rejoining) return;
    this.relocating = true;
    try {
      const leader = await findLeader(this.jobManagers);
      if (leader === undefined || (leader.url === this.jm.url && leader.epoch <= this.epoch)) return;
      log.info({ taskManager: this.id, leader: leader.url, epoch: leader.epoch }, 'a new JobManager leads: registering with it');
      this.jm.moveTo(leader.url);
      await this.register();
      this.heartbeat?.setId({ id: this.id, session: this.session }, this.jm.url);
    } catch (error) {
      log.warn({ taskManager: this.id, err: error }, 'could not register with the new leader');
    } finally {
      this.relocating = false;
    }
  }

  /**
   * A leader's epoch, seen on a message or a registration: a newer one fences every older
   * leader off. The tasks deployed under older epochs stop (their reports are no longer
   * sent: the new leader runs the job anew from its checkpoint), and their partitions go.
   */
  private seeEpoch(epoch: number): void {
    if (epoch <= this.epoch) return;
    const previous = this.epoch;
    this.epoch = epoch;
    if (previous === 0 && this.tasks.size === 0) return;
    const tasks = [...this.tasks.values()];
    log.info({ taskManager: this.id, epoch, previous, tasks: tasks.length }, 'a newer leader: the tasks of the older one stop');
    for (const task of tasks) task.cancel();
    this.env.partitions.releaseWhere(() => true, new SpillwayError('SPW_ERR_PARTITION_RELEASED', `the JobManager leader changed (epoch ${epoch})`));
    this.fencing = Promise.all([this.fencing, ...tasks.map((task) => task.whenEnded())]).then(() => undefined);
  }

  /** Every message of a JobManager names its epoch: an older one than seen is refused (SPW_ERR_FENCED), a newer one fences the older off. */
  private checkEpoch(header: string | string[] | undefined): void {
    if (typeof header !== 'string') return;
    const epoch = Number(header);
    if (!Number.isInteger(epoch)) return;
    if (epoch < this.epoch) throw new SpillwayError('SPW_ERR_FENCED', `a message of leader epoch ${epoch}, and epoch ${this.epoch} leads: refused`);
    this.seeEpoch(epoch);
  }

  /** The routes of TASKMANAGER_ROUTES, as plugins (routes/); every message of a JobManager is checked for its epoch first. */
  private routes(): void {
    this.http.addHook('onRequest', async (request) => this.checkEpoch(request.headers[EPOCH_HEADER]));
    const context = this.context();
    void this.http.register(taskRoutes, context);
    void this.http.register(jobRoutes, context);
    void this.http.register(statusRoutes, context);
  }

  /** What the route plugins serve from. */
  private context(): TaskManagerContext {
    return {
      id: () => this.id,
      tasks: this.tasks,
      metrics: this.metricsRegistry,
      deploy: async (descriptor) => {
        await this.fencing;
        const execution = executionId(descriptor.taskId, descriptor.attempt);
        if (this.tasks.has(execution)) throw new SpillwayError('SPW_ERR_TASK_DEPLOYED', `task ${descriptor.taskId} attempt ${descriptor.attempt} is deployed already`);
        void this.deploy(expandDeployment(descriptor));
      },
      updatePartition: (execution, partitionId, location) => {
        const task = this.tasks.get(execution);
        if (task) task.updatePartition(partitionId, location);
        else this.earlyLocations.set(execution, [...(this.earlyLocations.get(execution) ?? []), [partitionId, location]]);
      },
      jobCanceled: (jobId) => this.canceledJobs.add(jobId),
      releasePartitions: (which, cause) => this.env.partitions.releaseWhere(which, cause),
      status: () => this.status(),
    };
  }

  private status(): TaskManagerStatus {
    return {
      id: this.id,
      pid: process.pid,
      tasks: [...this.tasks.keys()],
      partitions: this.env.partitions.ids(),
      spillFiles: fs.existsSync(this.partitionDir) ? fs.readdirSync(this.partitionDir) : [],
      bytesWrittenToDisk: this.env.partitions.bytesWrittenToDisk,
      busyThreads: this.threads.busyThreads,
      idleThreads: this.threads.idleThreads,
      managedMemory: this.managedMemory,
      managedSpillFiles: fs.existsSync(this.managedDir) ? fs.readdirSync(this.managedDir, { recursive: true }).map(String) : [],
      segmentsInUse: this.env.buffers.segmentsInUse,
      totalSegments: this.env.buffers.totalSegments,
      poolUsage: this.metricsRegistry.poolUsage(),
      rss: process.memoryUsage.rss(),
      peakRss: process.resourceUsage().maxRSS * 1024,
    };
  }

  private async deploy(descriptor: TaskDeploymentDescriptor): Promise<void> {
    const { taskId, attempt } = descriptor;
    // Deployed by the leader of this epoch: once another leads, nothing of this task is reported.
    const epoch = this.epoch;
    const current = (): boolean => epoch === this.epoch;
    const execution = executionId(taskId, attempt);
    let task: TaskHost | null = null;
    let running: Promise<void> = Promise.resolve();
    let outcome: TaskOutcome;
    try {
      await this.loader.prepare(descriptor.job);
      if (this.canceledJobs.has(descriptor.jobId)) throw new SpillwayError('SPW_ERR_TASK_CANCELED', `job ${descriptor.jobId} was canceled`);
      // Its own checkpoint folder, if it has one, takes the task's state files (their paths go to the JobManager).
      if (descriptor.checkpoints && this.options.checkpointDir) descriptor.checkpoints = { ...descriptor.checkpoints, directory: this.options.checkpointDir };
      task = new TaskHost(
        descriptor,
        this.env,
        this.threads,
        this.id,
        this.options.cancelTimeoutMs ?? DEFAULT_CANCEL_TIMEOUT_MS,
        {
          partitionReady: (partitionId) => {
            if (current()) this.announcePartition(partitionId);
          },
          collected: (records, part, origin) => (current() ? this.sendResults(taskId, attempt, records, part, origin) : Promise.resolve()),
          nextSplits: (request) => (current() ? this.requestSplits(taskId, attempt, request) : Promise.resolve([])),
          checkpointAcknowledged: (ack) => void retrying(async () => current() && (await this.jm.acknowledgeCheckpoint(taskId, attempt, ack))).catch((e: Error) => log.warn({ task: taskId, error: e.message }, 'checkpoint acknowledgement lost')),
          checkpointDeclined: (id, error) => void retrying(async () => current() && (await this.jm.declineCheckpoint(taskId, attempt, id, error))).catch((e: Error) => log.warn({ task: taskId, error: e.message }, 'checkpoint decline lost')),
        },
        this.slotMemory(taskId),
      );
      this.tasks.set(execution, task);
      for (const [partitionId, location] of this.earlyLocations.get(execution) ?? []) task.updatePartition(partitionId, location);
      this.earlyLocations.delete(execution);
      // The task starts without waiting for the JobManager's answer; its final state follows the RUNNING report.
      running = this.report(descriptor, task, TaskState.RUNNING, Date.now(), undefined, current);
      log.info({ job: descriptor.jobId, task: taskId, taskManager: this.id }, 'task running');
      outcome = await task.run();
    } catch (error) {
      const canceled = task?.isCanceled === true || this.canceledJobs.has(descriptor.jobId);
      outcome = { state: canceled ? TaskState.CANCELED : TaskState.FAILED, error: serializeError(error, canceled ? 'SPW_ERR_TASK_CANCELED' : 'SPW_ERR_TASK_FAILED') };
    } finally {
      if (task !== null) this.metricsRegistry.taskEnded(task);
      this.tasks.delete(execution);
      this.earlyLocations.delete(execution);
    }
    const ended = Date.now();
    await running;
    const failed = outcome.state === TaskState.FAILED;
    const error = failed && outcome.error ? { code: outcome.error.code, message: `${outcome.error.message} (task ${taskId} attempt ${attempt} on taskmanager ${this.id})` } : undefined;
    log[failed ? 'warn' : 'info']({ job: descriptor.jobId, task: taskId, attempt, taskManager: this.id, state: outcome.state, error }, 'task ended');
    await this.report(descriptor, task, outcome.state, ended, error, current);
  }

  /** A slot's share of managed memory and the task's own spill folder. */
  private slotMemory(taskId: string): ManagedMemorySpec {
    return { bytes: Math.floor(this.managedMemory / this.options.slots), spillDir: taskSpillDir(this.managedDir, taskId) };
  }

  /** Counters of running tasks, for progress while a job runs; a lost update is replaced by the next. */
  private sendCounters(): void {
    if (this.tasks.size === 0) return;
    const tasks = [...this.tasks.values()].map((task) => ({ taskId: task.descriptor.taskId, counters: task.counters, buffers: task.bufferStats() }));
    this.jm.sendCounters(this.id, tasks).catch(() => {});
  }

  private announcePartition(partitionId: string): void {
    log.debug({ partition: partitionId, taskManager: this.id }, 'partition ready');
    const location: PartitionLocation = { taskManagerId: this.id, host: this.env.address.host, dataPort: this.env.address.port };
    void this.deliver(`announce partition ${partitionId}`, () => this.jm.partitionReady(partitionId, location));
  }

  /**
   * Sends a message a job cannot do without (a ready partition, a task state),
   * retrying for up to a minute while the JobManager is unreachable or failing.
   */
  private async deliver(what: string, call: () => Promise<unknown>): Promise<void> {
    try {
      await retrying(call);
    } catch (error) {
      log.error({ taskManager: this.id, err: error }, `could not ${what}`);
    }
  }

  /** A task's collected records, retried like a state report; the task fails if they cannot be delivered. */
  private async sendResults(taskId: string, attempt: number, records: Uint8Array, part?: number, origin?: number): Promise<void> {
    // The JobManager keeps one set of records per task and part: a repeated POST replaces, never adds.
    const body = Buffer.from(records.buffer, records.byteOffset, records.byteLength);
    await retrying(() => this.jm.sendResults(taskId, attempt, body, part, origin));
  }

  /** A source's next splits, retried like a state report: a repeated request gets the same answer. */
  private async requestSplits(taskId: string, attempt: number, request: number): Promise<Split[]> {
    return retrying(() => this.jm.nextSplits(taskId, attempt, request));
  }

  /** A task's state; the task is null when it failed before it could be created. */
  private async report(
    descriptor: TaskDeploymentDescriptor,
    task: TaskHost | null,
    state: TaskState.RUNNING | TaskEndState,
    at: number,
    error?: SerializedError,
    current: () => boolean = () => true,
  ): Promise<void> {
    const { taskId, attempt } = descriptor;
    const report: TaskStateReport = { state, attempt, error, counters: task?.counters, at };
    // A task of an older leader reports nothing to the new one, which runs its job anew under the same task ids.
    await this.deliver(`report ${state} of ${taskId}`, async () => current() && (await this.jm.reportTaskState(taskId, report, this.id)));
  }

  /** A data connection to a peer broke or was refused: the JobManager checks that peer at once. */
  private reportPeerLost(host: string, dataPort: number, error: Error): void {
    this.jm.suspect(host, dataPort, `taskmanager ${this.id} lost its data connection: ${error.message}`).catch(
      (e: Error) => console.error(`taskmanager ${this.id}: could not report a lost peer: ${e.message}`),
    );
  }
}

/** Where the JobManager and peers reach a TaskManager; a wildcard bind says nothing of that. */
function advertisedHost(options: TaskManagerOptions): string {
  const host = options.host ?? DEFAULT_HOST;
  if (options.advertiseHost !== undefined) return options.advertiseHost;
  if (host === '0.0.0.0' || host === '::' || host === '') {
    throw new SpillwayError('SPW_ERR_CONFIG', `a TaskManager bound to ${host} needs --advertise-host: the address the JobManager and other TaskManagers reach it at`);
  }
  return host;
}

function credentialsHint(secret: ClusterSecret | null): string {
  return secret === null
    ? `the JobManager wants a cluster secret and this TaskManager has none: set ${SECRET_ENV} or --secret-file`
    : `this TaskManager's cluster secret is not the JobManager's: check ${SECRET_ENV} or --secret-file`;
}

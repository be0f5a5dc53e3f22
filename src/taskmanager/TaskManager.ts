import fs from 'node:fs';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { pack } from 'msgpackr';
import { callJson, retrying } from '../job/Http.js';
import type { PartitionLocation, TaskDeploymentDescriptor, TaskState } from '../job/TaskDeployment.js';
import { ShuffleEnvironment } from '../network/ShuffleEnvironment.js';
import { JobLoader } from '../job/JobLoader.js';
import { Heartbeat, type Registered } from './Heartbeat.js';
import { ExpiringMap, ExpiringSet, JOB_MEMORY_MS } from './Expiring.js'; // issue 11
import { Task } from './Task.js';

export interface TaskManagerOptions {
  jobManager: string;
  slots: number;
  /** Network memory, bytes. */
  memory: number;
  spillDir: string;
  host?: string;
  heartbeatIntervalMs?: number;
  /** Deletes spillDir on stop (it was made for this process). */
  ownsSpillDir?: boolean;
  segmentSize?: number;
}

/**
 * A worker process: registers with the JobManager and heartbeats, accepts task
 * deployments and cancellations over HTTP, runs the tasks on its ShuffleEnvironment
 * and reports task states and ready partitions back.
 */
export class TaskManager {
  private readonly env: ShuffleEnvironment;
  private readonly http: FastifyInstance;
  private readonly tasks = new Map<string, Task>();
  /** Jobs canceled here; a deployment of theirs that arrives late does not start. */
  private readonly canceledJobs = new ExpiringSet<string>(JOB_MEMORY_MS); // issue 11: forgotten after a while
  /** Partition locations that arrived before their task was created. */
  private readonly earlyLocations = new ExpiringMap<string, [string, PartitionLocation][]>(JOB_MEMORY_MS); // issue 11: a task that never came
  private readonly loader: JobLoader;
  private id = '';
  private session = ''; // issue 11: the JobManager process registered with
  private heartbeat: Heartbeat | null = null;
  private metrics: NodeJS.Timeout | null = null;
  private readonly jm: string;
  private registration: Record<string, unknown> = {};
  private rejoining = false;
  private readonly partitionDir: string;

  constructor(private readonly options: TaskManagerOptions) {
    this.jm = options.jobManager.replace(/\/$/, '');
    this.partitionDir = path.join(options.spillDir, 'partitions');
    this.env = new ShuffleEnvironment({
      memory: options.memory,
      segmentSize: options.segmentSize,
      host: options.host,
      spillDir: this.partitionDir,
    });
    this.loader = new JobLoader(path.join(options.spillDir, 'modules'), async (hash) => {
      const { source } = await callJson<{ source: string }>('GET', `${this.jm}/modules/${hash}`);
      return source;
    });
    this.http = Fastify({ bodyLimit: 64 << 20 });
    this.routes();
  }

  get taskManagerId(): string {
    return this.id;
  }

  async start(): Promise<void> {
    fs.mkdirSync(this.options.spillDir, { recursive: true });
    const data = await this.env.start();
    const host = this.options.host ?? '127.0.0.1';
    await this.http.listen({ host, port: 0 });
    const address = this.http.server.address();
    const httpPort = typeof address === 'object' && address ? address.port : 0;
    this.registration = { host, dataPort: data.port, httpPort, slots: this.options.slots, memory: this.options.memory };
    await this.register();
    this.heartbeat = new Heartbeat(
      this.jm,
      { id: this.id, session: this.session },
      this.options.heartbeatIntervalMs ?? 1000,
      // A 404 for an id this TaskManager has already left behind needs nothing.
      (id) => id === this.id && void this.rejoin(),
      (message) => console.error(`taskmanager ${this.id}: heartbeat failed: ${message}`),
      (modules, asOf) => this.loader.keepOnly(modules, asOf), // issue 11: drop copies of modules the JobManager dropped
    );
    this.metrics = setInterval(() => this.sendCounters(), this.options.heartbeatIntervalMs ?? 1000);
    this.metrics.unref();
  }

  async stop(): Promise<void> {
    if (this.metrics) clearInterval(this.metrics);
    try {
      await this.heartbeat?.stop();
      for (const task of this.tasks.values()) task.cancel();
      await this.http.close();
      await this.env.close();
    } finally {
      if (this.options.ownsSpillDir) fs.rmSync(this.options.spillDir, { recursive: true, force: true });
    }
  }

  private async register(): Promise<void> {
    ({ id: this.id, session: this.session } = await callJson<Registered>('POST', `${this.jm}/internal/taskmanagers`, this.registration));
  }

  /**
   * The JobManager declared this TaskManager lost (it failed the jobs that ran here):
   * stop what still runs, drop every partition, and register afresh with empty slots.
   */
  private async rejoin(): Promise<void> {
    if (this.rejoining) return;
    this.rejoining = true;
    try {
      for (const task of this.tasks.values()) task.cancel();
      this.env.partitions.releaseWhere(() => true, new Error(`taskmanager ${this.id} was declared lost`));
      await this.register();
      this.heartbeat?.setId({ id: this.id, session: this.session });
      console.error(`taskmanager registered again as ${this.id}`);
    } catch (error) {
      console.error(`taskmanager ${this.id}: could not register again: ${(error as Error).message}`);
    } finally {
      this.rejoining = false;
    }
  }

  private routes(): void {
    this.http.post<{ Body: TaskDeploymentDescriptor }>('/tasks', async (request, reply) => {
      const descriptor = request.body;
      if (this.tasks.has(descriptor.taskId)) return reply.code(409).send({ error: `task ${descriptor.taskId} is deployed already` });
      void this.deploy(descriptor);
      return reply.code(202).send({ taskId: descriptor.taskId });
    });
    this.http.post<{ Params: { taskId: string }; Body: { partitionId: string; location: PartitionLocation } }>(
      '/tasks/:taskId/partitions',
      async (request) => {
        const { partitionId, location } = request.body;
        const task = this.tasks.get(request.params.taskId);
        if (task) task.updatePartition(partitionId, location);
        else this.earlyLocations.set(request.params.taskId, [...(this.earlyLocations.get(request.params.taskId) ?? []), [partitionId, location]]);
        return {};
      },
    );
    this.http.post<{ Params: { jobId: string } }>('/jobs/:jobId/cancel', async (request) => {
      this.canceledJobs.add(request.params.jobId);
      for (const task of this.tasks.values()) if (task.descriptor.jobId === request.params.jobId) task.cancel();
      return {};
    });
    this.http.post<{ Params: { jobId: string } }>('/jobs/:jobId/release', async (request) => {
      const prefix = `${request.params.jobId}/`;
      this.env.partitions.releaseWhere((id) => id.startsWith(prefix), new Error(`job ${request.params.jobId} ended`));
      return {};
    });
    this.http.get('/status', async () => ({
      id: this.id,
      tasks: [...this.tasks.keys()],
      partitions: this.env.partitions.ids(),
      spillFiles: fs.existsSync(this.partitionDir) ? fs.readdirSync(this.partitionDir) : [],
      segmentsInUse: this.env.buffers.segmentsInUse,
      totalSegments: this.env.buffers.totalSegments,
      rss: process.memoryUsage.rss(),
      peakRss: process.resourceUsage().maxRSS * 1024,
    }));
  }

  private async deploy(descriptor: TaskDeploymentDescriptor): Promise<void> {
    const { taskId } = descriptor;
    let task: Task | null = null;
    let running: Promise<void> = Promise.resolve();
    try {
      const job = await this.loader.load(descriptor.job);
      if (this.canceledJobs.has(descriptor.jobId)) throw new Error(`job ${descriptor.jobId} was canceled`);
      task = new Task(descriptor, job, this.env, this.id, {
        partitionReady: (partitionId) => this.announcePartition(partitionId),
        collected: (records) => this.sendResults(taskId, records),
      });
      this.tasks.set(taskId, task);
      for (const [partitionId, location] of this.earlyLocations.get(taskId) ?? []) task.updatePartition(partitionId, location);
      this.earlyLocations.delete(taskId);
      // The task starts without waiting for the JobManager's answer; its final state follows the RUNNING report.
      running = this.report(taskId, task, 'RUNNING');
      await task.run();
      await running;
      await this.report(taskId, task, 'FINISHED');
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await running;
      if (task?.isCanceled || this.canceledJobs.has(descriptor.jobId)) await this.report(taskId, task, 'CANCELED');
      else await this.report(taskId, task, 'FAILED', `${message} (task ${taskId} on taskmanager ${this.id})`);
    } finally {
      this.tasks.delete(taskId);
      this.earlyLocations.delete(taskId);
    }
  }

  /** Counters of running tasks, for progress while a job runs; a lost update is replaced by the next. */
  private sendCounters(): void {
    if (this.tasks.size === 0) return;
    const tasks = [...this.tasks.values()].map((task) => ({ taskId: task.descriptor.taskId, counters: task.counters }));
    callJson('POST', `${this.jm}/internal/taskmanagers/${this.id}/counters`, { tasks }).catch(() => {});
  }

  private announcePartition(partitionId: string): void {
    const location: PartitionLocation = { taskManagerId: this.id, host: this.env.address.host, dataPort: this.env.address.port };
    void this.deliver(`announce partition ${partitionId}`, () => callJson('POST', `${this.jm}/internal/partitions/ready`, { partitionId, location }));
  }

  /**
   * Sends a message a job cannot do without (a ready partition, a task state),
   * retrying for up to a minute while the JobManager is unreachable or failing.
   */
  private async deliver(what: string, call: () => Promise<unknown>): Promise<void> {
    try {
      await retrying(call);
    } catch (error) {
      console.error(`taskmanager ${this.id}: could not ${what}: ${(error as Error).message}`);
    }
  }

  /** A task's collected records, retried like a state report; the task fails if they cannot be delivered. */
  private async sendResults(taskId: string, records: unknown[]): Promise<void> {
    // The JobManager keeps one set of records per task: a repeated POST replaces, never adds.
    const body = pack(records);
    await retrying(() => callJson('POST', `${this.jm}/internal/tasks/${encodeURIComponent(taskId)}/results`, body, { contentType: 'application/x-msgpack' }));
  }

  /** A task's state; the task is null when it failed before it could be created. */
  private async report(taskId: string, task: Task | null, state: TaskState, error?: string): Promise<void> {
    const body = { state, error, counters: task?.counters, taskManagerId: this.id };
    await this.deliver(`report ${state} of ${taskId}`, () => callJson('POST', `${this.jm}/internal/tasks/${encodeURIComponent(taskId)}/state`, body));
  }
}

/**
 * Simulated TaskManagers for the control plane beyond this machine (issue 41): many of
 * them in one process, each with a listener of its own (one HTTP server behind them
 * all), speaking the real control plane (src/rpc/ControlPlane.ts) to a real JobManager:
 * they register, heartbeat, offer slots, accept deployments, announce their pipelined
 * partitions as a first buffer would, report RUNNING and, after `taskMs`, FINISHED
 * (a blocking partition announced first), and answer cancels, releases and status
 * checks. No task runs and no record moves: what is measured is the JobManager.
 * Every deployment and every report sent is counted, to be checked, not just timed.
 */
import http from 'node:http';
import net from 'node:net';
import { JOBMANAGER_ROUTES as JM, TASKMANAGER_ROUTES as TM, pathOf, type Route } from '../../src/rpc/ControlPlane.js';
import { expandDeployment } from '../../src/rpc/ConsumedPartitionGroup.js';
import { Agent, request } from 'undici';
import { authorizationHeader, callRoute } from '../../src/rpc/HttpClient.js';
import { executionId, type PartitionLocation, type TaskDeploymentDescriptor, type TaskDeploymentMessage, type TaskStateReport } from '../../src/rpc/TaskDeployment.js';
import { TaskState } from '../../src/lifecycle/TaskState.js';

export interface FleetOptions {
  jobManager: string;
  taskManagers: number;
  slots: number;
  /** How long a deployed task runs before it finishes. */
  taskMs: number;
  heartbeatMs: number;
}

/** What a fleet saw and did: each deployment (execution id), each report sent, by state. */
export interface FleetCounts {
  deployed: string[];
  reports: Record<string, number>;
  /** Channels of every deployment's gates, expanded as a TaskManager would. */
  channels: number;
  /** Heartbeats, reports or announcements the JobManager refused or did not answer, and the last one's error. */
  failedCalls: number;
  lastFailure?: string;
}

interface Simulated {
  index: number;
  id: string;
  session: string;
  location: PartitionLocation;
  server: net.Server;
  sockets: Set<net.Socket>;
  heartbeat: NodeJS.Timeout | null;
  beating: boolean;
  tasks: Map<string, { descriptor: TaskDeploymentDescriptor; timer: NodeJS.Timeout | null }>;
  lost: boolean;
}

/** A fleet of simulated TaskManagers in this process. */
export class SimulatedTaskManagers {
  readonly counts: FleetCounts = { deployed: [], reports: {}, channels: 0, failedCalls: 0 };
  private readonly members: Simulated[] = [];
  private readonly byPort = new Map<number, Simulated>();
  /** Heartbeats go on connections of their own, as a real TaskManager's from its heartbeat thread: never queued behind reports. */
  private readonly heartbeats = new Agent({ connections: 8, keepAliveTimeout: 4000 });
  private readonly http = http.createServer((request, response) => void this.handle(request, response));

  constructor(private readonly options: FleetOptions) {}

  /** Starts every TaskManager's listener and registers each with the JobManager. */
  async start(): Promise<void> {
    for (let index = 0; index < this.options.taskManagers; index++) {
      const sockets = new Set<net.Socket>();
      const server = net.createServer((socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
        this.http.emit('connection', socket);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as net.AddressInfo).port;
      const member: Simulated = { index, id: '', session: '', location: { taskManagerId: '', host: '127.0.0.1', dataPort: port }, server, sockets, heartbeat: null, beating: false, tasks: new Map(), lost: false };
      this.members.push(member);
      this.byPort.set(port, member);
    }
    // Registrations a few at a time, as a fleet coming up would.
    for (let i = 0; i < this.members.length; i += 50) await Promise.all(this.members.slice(i, i + 50).map((m) => this.register(m)));
  }

  /** The ids the JobManager gave this fleet's TaskManagers. */
  get ids(): string[] {
    return this.members.map((m) => m.id);
  }

  /** A TaskManager is lost: it stops beating and answering, its connections cut (as a SIGKILL would). */
  lose(id: string): void {
    const member = this.members.find((m) => m.id === id)!;
    member.lost = true;
    if (member.heartbeat) clearInterval(member.heartbeat);
    for (const task of member.tasks.values()) if (task.timer) clearTimeout(task.timer);
    member.server.close();
    for (const socket of member.sockets) socket.destroy();
  }

  /** Stops every TaskManager: timers, listeners and connections. */
  async stop(): Promise<void> {
    for (const member of this.members) if (!member.lost) this.lose(member.id);
    this.http.closeAllConnections();
    await new Promise((resolve) => this.http.close(resolve));
    await this.heartbeats.close();
  }

  private async register(member: Simulated): Promise<void> {
    const answer = await callRoute(this.options.jobManager, JM.register, { params: {}, body: { host: '127.0.0.1', dataPort: member.location.dataPort, httpPort: member.location.dataPort, slots: this.options.slots, memory: 1 << 25 } });
    member.id = answer.id;
    member.session = answer.session;
    member.location = { ...member.location, taskManagerId: answer.id };
    // Beats spread over the interval, so that a thousand do not arrive at once.
    const first = setTimeout(() => {
      member.heartbeat = setInterval(() => this.beat(member), this.options.heartbeatMs);
    }, Math.floor((member.index * this.options.heartbeatMs) / this.options.taskManagers));
    first.unref();
  }

  /** One beat at a time, as HeartbeatThread.ts: a slow answer skips a beat instead of opening another socket. */
  private beat(member: Simulated): void {
    if (member.beating) return;
    member.beating = true;
    const url = `${this.options.jobManager}${pathOf(JM.heartbeat, { id: member.id })}`;
    const timeout = this.options.heartbeatMs * 4;
    request(url, { method: 'POST', dispatcher: this.heartbeats, headers: { ...authorizationHeader(url), 'content-type': 'application/json' }, body: JSON.stringify({ session: member.session }), headersTimeout: timeout, bodyTimeout: timeout })
      .then(async (response) => {
        await response.body.text();
        if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
      })
      .catch((error: Error) => {
        this.counts.failedCalls++;
        this.counts.lastFailure = `heartbeat: ${error.message}`;
      })
      .finally(() => (member.beating = false));
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const member = this.byPort.get(request.socket.localPort ?? 0);
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body: unknown = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString());
    const url = new URL(request.url ?? '/', 'http://x');
    const answer = (status: number, value: unknown = {}): void => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(value));
    };
    if (member === undefined || member.lost) return answer(503, { code: 'SPW_ERR_CONTROL_CALL', error: 'gone' });
    const params = matches(TM.cancelTask, request.method, url.pathname) ?? matches(TM.updatePartition, request.method, url.pathname);
    if (matches(TM.deployTask, request.method, url.pathname)) {
      this.deploy(member, body as TaskDeploymentMessage);
      return answer(202, { taskId: (body as TaskDeploymentMessage).taskId });
    }
    if (params && url.pathname.endsWith('/cancel')) this.cancel(member, decodeURIComponent(params.executionId));
    const job = matches(TM.cancelJob, request.method, url.pathname);
    if (job) for (const [execution, task] of member.tasks) if (task.descriptor.jobId === job.jobId) this.cancel(member, execution);
    if (matches(TM.status, request.method, url.pathname)) return answer(200, { id: member.id, pid: process.pid, tasks: [...member.tasks.keys()], partitions: [] });
    // Partition updates, checkpoint notices and releases need nothing of a task that does not run.
    return answer(200);
  }

  private deploy(member: Simulated, message: TaskDeploymentMessage): void {
    const descriptor = expandDeployment(message);
    const execution = executionId(descriptor.taskId, descriptor.attempt);
    this.counts.deployed.push(execution);
    for (const gate of descriptor.inputs) this.counts.channels += gate.channels.length;
    member.tasks.set(execution, { descriptor, timer: null });
    this.report(member, descriptor, { state: TaskState.RUNNING, attempt: descriptor.attempt });
    for (const output of descriptor.outputs) if (output.type === 'pipelined' || output.type === 'hybrid') this.announce(member, output.partitionId);
    const timer = setTimeout(() => {
      for (const output of descriptor.outputs) if (output.type !== 'pipelined' && output.type !== 'hybrid') this.announce(member, output.partitionId);
      member.tasks.delete(execution);
      this.report(member, descriptor, { state: TaskState.FINISHED, attempt: descriptor.attempt });
    }, this.options.taskMs);
    member.tasks.set(execution, { descriptor, timer });
  }

  private cancel(member: Simulated, execution: string): void {
    const task = member.tasks.get(execution);
    if (!task) return;
    if (task.timer) clearTimeout(task.timer);
    member.tasks.delete(execution);
    this.report(member, task.descriptor, { state: TaskState.CANCELED, attempt: task.descriptor.attempt });
  }

  private report(member: Simulated, descriptor: TaskDeploymentDescriptor, report: TaskStateReport): void {
    this.counts.reports[report.state] = (this.counts.reports[report.state] ?? 0) + 1;
    callRoute(this.options.jobManager, JM.taskState, { params: { taskId: descriptor.taskId }, body: { ...report, at: Date.now(), taskManagerId: member.id } }).catch((error: Error) => {
      this.counts.failedCalls++;
      this.counts.lastFailure = `task state: ${error.message}`;
    });
  }

  private announce(member: Simulated, partitionId: string): void {
    callRoute(this.options.jobManager, JM.partitionReady, { params: {}, body: { partitionId, location: member.location } }).catch((error: Error) => {
      this.counts.failedCalls++;
      this.counts.lastFailure = `partition ready: ${error.message}`;
    });
  }
}

/** The route's path parameters if `method path` is that route, else null. */
function matches(route: Route, method: string | undefined, path: string): Record<string, string> | null {
  if (method !== route.method) return null;
  const names: string[] = [];
  const pattern = new RegExp(`^${route.path.replace(/:(\w+)/g, (_, name: string) => (names.push(name), '([^/]+)'))}$`);
  const found = pattern.exec(path);
  return found === null ? null : Object.fromEntries(names.map((name, i) => [name, found[i + 1]]));
}

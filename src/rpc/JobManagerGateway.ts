import { JOBMANAGER_ROUTES as JM, type JobManagerAnswer, type Registration, type TaskProgress } from './ControlPlane.js';
import { callRoute } from './HttpClient.js';
import type { SerializedError } from '../errors/Errors.js';
import type { CheckpointAck, PartitionLocation, Split, TaskStateReport } from './TaskDeployment.js';

const NONE = {};

/**
 * The JobManager as a TaskManager calls it: one method a control message (the routes
 * of JOBMANAGER_ROUTES; the heartbeat goes from its own thread, HeartbeatThread.ts).
 * Each returns the JobManager's answer, or rejects with an HttpError (a refusal,
 * with the server's code) or undici's error (unreachable); none retries.
 */
export class JobManagerGateway {
  /** `url`: the JobManager's base URL; a trailing slash is dropped. */
  constructor(url: string) {
    this.current = url.replace(/\/$/, '');
  }

  private current: string;

  /** The base URL of the JobManager called: the leader's, as last found. */
  get url(): string {
    return this.current;
  }

  /** Calls go to another JobManager from now (a new leader); calls being retried follow. */
  moveTo(url: string): void {
    this.current = url.replace(/\/$/, '');
  }

  /** Registers this TaskManager; resolves with its id, the JobManager's session and the modules it keeps. */
  register(registration: Registration): Promise<JobManagerAnswer & { id: string }> {
    return callRoute(this.url, JM.register, { params: NONE, body: registration });
  }

  /** Says this TaskManager stops; gives up after `timeoutMs`. */
  async deregister(id: string, session: string, timeoutMs: number): Promise<void> {
    await callRoute(this.url, JM.deregister, { params: { id }, query: { session } }, { timeoutMs });
  }

  /** Reports a peer whose data connection broke or was refused. */
  async suspect(host: string, dataPort: number, reason: string): Promise<void> {
    await callRoute(this.url, JM.suspect, { params: NONE, body: { host, dataPort, reason } });
  }

  /** Counters of the running tasks of TaskManager `id`. */
  async sendCounters(id: string, tasks: TaskProgress[]): Promise<void> {
    await callRoute(this.url, JM.counters, { params: { id }, body: { tasks } });
  }

  /** A task attempt's state, reported by TaskManager `taskManagerId`. */
  async reportTaskState(taskId: string, report: TaskStateReport, taskManagerId: string): Promise<void> {
    await callRoute(this.url, JM.taskState, { params: { taskId }, body: { ...report, taskManagerId } });
  }

  /** The next splits of a task attempt's text source (its request number `request`); empty once all are handed out. */
  async nextSplits(taskId: string, attempt: number, request: number): Promise<Split[]> {
    return (await callRoute(this.url, JM.splits, { params: { taskId }, body: { attempt, request } })).splits;
  }

  /** A partition may be read, at `location`. */
  async partitionReady(partitionId: string, location: PartitionLocation): Promise<void> {
    await callRoute(this.url, JM.partitionReady, { params: NONE, body: { partitionId, location } });
  }

  /** A task attempt's collected records, packed (one msgpack array): all, or part `part` of an unbounded job's. */
  async sendResults(taskId: string, attempt: number, packed: Buffer, part?: number, origin?: number): Promise<void> {
    const query = { attempt: String(attempt), part: part === undefined ? undefined : String(part), origin: origin === undefined ? undefined : String(origin) };
    await callRoute(this.url, JM.results, { params: { taskId }, body: packed, query });
  }

  /** A task attempt stored its part of a checkpoint. */
  async acknowledgeCheckpoint(taskId: string, attempt: number, ack: CheckpointAck): Promise<void> {
    await callRoute(this.url, JM.acknowledgeCheckpoint, { params: { taskId, id: String(ack.checkpointId) }, body: { attempt, ack } });
  }

  /** A task attempt could not take part in a checkpoint. */
  async declineCheckpoint(taskId: string, attempt: number, id: number, error: SerializedError): Promise<void> {
    await callRoute(this.url, JM.declineCheckpoint, { params: { taskId, id: String(id) }, body: { attempt, error } });
  }

  /** An uploaded module's source. */
  async moduleSource(hash: string): Promise<string> {
    return (await callRoute(this.url, JM.moduleSource, { params: { hash } })).source;
  }
}

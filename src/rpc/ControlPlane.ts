import type { ErrorCode, SerializedError } from '../errors/Errors.js';
import type { Barrier } from '../network/Events.js';
import type { TaskBufferStats } from '../network/networkThread/NetworkEnd.js';
import type { CheckpointAck, PartitionLocation, Split, TaskCounters, TaskDeploymentMessage, TaskStateReport } from './TaskDeployment.js';

/**
 * The control plane between the JobManager and its TaskManagers: every message, one
 * route each, written once here and read by both sides. A server registers its handler
 * from the route (`serve`, RouteServer.ts); a client calls it through a gateway
 * (JobManagerGateway, TaskManagerGateway), never by a URL of its own. CONTROL.md beside
 * this file says who sends each message, when, and what a failure means.
 *
 * Type parameters: Params (the path's `:names`), Body, Reply, Query.
 */
export interface Route<P extends Params = Params, B = unknown, R = unknown, Q extends Query = Query> {
  method: 'GET' | 'POST' | 'DELETE';
  /** fastify's pattern: `:name` is a parameter. */
  path: string;
  /** The JSON schema the server validates the body with, where it does. */
  bodySchema?: object;
  /** A body other than JSON: its content type. */
  contentType?: string;
  /** The status of a success, 200 unless given. */
  status?: number;
  /** The codes its refusals carry (beyond SPW_ERR_BAD_REQUEST for a body its schema refuses, and SPW_ERR_UNAUTHORIZED). */
  errors?: readonly ErrorCode[];
  /** Carries the types only; never set. */
  readonly types?: { params: P; body: B; reply: R; query: Q };
}

export type Params = Record<string, string>;
export type Query = Record<string, string | undefined>;
export type NoParams = Record<never, string>;
export type NoQuery = Record<never, string>;

/** What a message that needs no answer is answered with. */
export type Ack = Record<string, never>;

/** A route of a table, typed by its parameters: `types` is never set. */
export function route<P extends Params, B, R, Q extends Query = NoQuery>(spec: Omit<Route<P, B, R, Q>, 'types'>): Route<P, B, R, Q> {
  return spec;
}

/** The path of a route with its parameters filled in (each URI-encoded), and its query. */
export function pathOf<P extends Params>(route: Pick<Route<P>, 'path'>, params: P, query?: Query): string {
  const path = route.path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(params[name]));
  const search = Object.entries(query ?? {}).filter((entry): entry is [string, string] => entry[1] !== undefined);
  return search.length === 0 ? path : `${path}?${new URLSearchParams(search).toString()}`;
}

/** A TaskManager as it registers: where it is reached, and what it offers. */
export interface Registration {
  host: string;
  dataPort: number;
  httpPort: number;
  /** Its REST API is served over https. */
  https?: boolean;
  slots: number;
  memory: number;
}

/** The JobManager's answer to a registration or a heartbeat: its session and the modules it keeps. */
export interface JobManagerAnswer {
  session: string;
  modules: string[];
  /** The leader's fencing epoch (0 without HA): a TaskManager refuses messages of older ones from then on. */
  epoch?: number;
}

/** A running task's counters, as a TaskManager sends them each heartbeat interval. */
export interface TaskProgress {
  taskId: string;
  counters: TaskCounters;
  buffers?: TaskBufferStats;
}

/** What GET /status of a TaskManager answers. */
export interface TaskManagerStatus {
  id: string;
  pid: number;
  /** Execution ids (task id and attempt) of the tasks running. */
  tasks: string[];
  partitions: string[];
  spillFiles: string[];
  bytesWrittenToDisk: number;
  busyThreads: number;
  idleThreads: number;
  managedMemory: number;
  managedSpillFiles: string[];
  segmentsInUse: number;
  totalSegments: number;
  poolUsage: unknown;
  rss: number;
  peakRss: number;
}

const registrationSchema = {
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
} as const;

/** Messages a TaskManager sends the JobManager (Flink's JobMasterGateway and ResourceManagerGateway in one). */
export const JOBMANAGER_ROUTES = {
  /** A TaskManager starts, or registers again after it was declared lost: it gets an id for this JobManager's session. */
  register: route<NoParams, Registration, JobManagerAnswer & { id: string }>({ method: 'POST', path: '/internal/taskmanagers', bodySchema: registrationSchema }),
  /** Every heartbeat interval, from the heartbeat thread; a 404 means: register again. */
  heartbeat: route<{ id: string }, { session: string }, JobManagerAnswer>({ method: 'POST', path: '/internal/taskmanagers/:id/heartbeat' }),
  /** A TaskManager stops. */
  deregister: route<{ id: string }, undefined, Ack, { session: string }>({ method: 'DELETE', path: '/internal/taskmanagers/:id' }),
  /** A TaskManager lost its data connection to a peer: the JobManager checks that peer at once. */
  suspect: route<NoParams, { host: string; dataPort: number; reason: string }, Ack>({ method: 'POST', path: '/internal/taskmanagers/suspect' }),
  /** Counters of the running tasks, each heartbeat interval; a lost one is replaced by the next. */
  counters: route<{ id: string }, { tasks: TaskProgress[] }, Ack>({ method: 'POST', path: '/internal/taskmanagers/:id/counters' }),
  /** A task attempt is RUNNING, or ended (FINISHED, FAILED with its coded error, CANCELED). */
  taskState: route<{ taskId: string }, TaskStateReport & { taskManagerId: string }, Ack>({ method: 'POST', path: '/internal/tasks/:taskId/state' }),
  /** A source's next splits for a task's attempt; a refusal (409, SPW_ERR_SPLIT_REQUEST) fails the task. */
  splits: route<{ taskId: string }, { attempt: number; request: number }, { splits: Split[] }>({
    method: 'POST',
    path: '/internal/tasks/:taskId/splits',
    bodySchema: {
      type: 'object',
      required: ['attempt', 'request'],
      properties: { attempt: { type: 'integer', minimum: 0 }, request: { type: 'integer', minimum: 0 } },
    },
  }),
  /** A partition may be read: a pipelined one at its first buffer, any other once finished. */
  partitionReady: route<NoParams, { partitionId: string; location: PartitionLocation }, Ack>({ method: 'POST', path: '/internal/partitions/ready' }),
  /** A collect sink's records, msgpack as the task packed them (all, or part `part` of an unbounded job's); a repeated POST replaces. */
  results: route<{ taskId: string }, Buffer, Ack, { attempt: string; part?: string; origin?: string }>({
    method: 'POST',
    path: '/internal/tasks/:taskId/results',
    contentType: 'application/x-msgpack',
  }),
  /** A task stored its part of checkpoint `id`: where, its size and checksum, and how long its barriers took. */
  acknowledgeCheckpoint: route<{ taskId: string; id: string }, { attempt: number; ack: CheckpointAck }, Ack>({ method: 'POST', path: '/internal/tasks/:taskId/checkpoints/:id' }),
  /** A task could not take part in checkpoint `id`: the checkpoint is aborted. */
  declineCheckpoint: route<{ taskId: string; id: string }, { attempt: number; error: SerializedError }, Ack>({ method: 'POST', path: '/internal/tasks/:taskId/checkpoints/:id/decline' }),
  /** An uploaded job module's source, fetched by a TaskManager before it runs a task of it (also public REST). */
  moduleSource: route<{ hash: string }, undefined, { source: string }>({ method: 'GET', path: '/modules/:hash' }),
  /** Only in a JobManager started with --expose-gc: a collection on demand, for tests and benches that measure the heap. */
  collectGarbage: route<NoParams, Ack, { heapUsed: number; heapTotal: number; rss: number; external: number }>({ method: 'POST', path: '/internal/debug/gc' }),
} as const;

/** Messages the JobManager sends one TaskManager (Flink's TaskExecutorGateway). */
export const TASKMANAGER_ROUTES = {
  /** Deploys a task attempt; answered (202) at once, its states follow as taskState messages. 409: deployed already. */
  deployTask: route<NoParams, TaskDeploymentMessage, { taskId: string }>({ method: 'POST', path: '/tasks', status: 202, errors: ['SPW_ERR_TASK_DEPLOYED', 'SPW_ERR_FENCED'] }),
  /** A producer's partition that a deployed task reads is ready, and where. */
  updatePartition: route<{ executionId: string }, { partitionId: string; location: PartitionLocation }, Ack>({
    method: 'POST',
    path: '/tasks/:executionId/partitions',
  }),
  /** Triggers a checkpoint at a source task: its barrier, which the task sends on at its reader's next resumable point. */
  triggerCheckpoint: route<{ executionId: string }, Barrier, Ack>({ method: 'POST', path: '/tasks/:executionId/checkpoints' }),
  /** Checkpoint `id` of a job completed (sinks commit) or was aborted: to every task of the job here. */
  notifyCheckpoint: route<{ jobId: string; id: string }, { completed: boolean }, Ack>({ method: 'POST', path: '/jobs/:jobId/checkpoints/:id' }),
  /** Cancels one attempt (its region restarts); answered once it has ended. */
  cancelTask: route<{ executionId: string }, Ack, Ack>({ method: 'POST', path: '/tasks/:executionId/cancel' }),
  /** Cancels every task of a job (it failed or was canceled); answered once they have ended. */
  cancelJob: route<{ jobId: string }, Ack, Ack>({ method: 'POST', path: '/jobs/:jobId/cancel' }),
  /** Releases the listed partitions of a job (of restarted attempts), or all of them (the job ended). */
  releasePartitions: route<{ jobId: string }, { partitions?: string[] }, Ack>({ method: 'POST', path: '/jobs/:jobId/release' }),
  /** What the TaskManager holds now; also the JobManager's check of a suspect TaskManager. */
  status: route<NoParams, undefined, TaskManagerStatus>({ method: 'GET', path: '/status' }),
  /** Prometheus text; scraped, not called by the JobManager. */
  metrics: route<NoParams, undefined, string>({ method: 'GET', path: '/metrics' }),
} as const;

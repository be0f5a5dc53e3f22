import type { ErrorCode } from '../errors/Errors.js';
import type { LeaderInfo } from '../ha/LeaderInfo.js';
import type { CheckpointsView } from '../jobmanager/checkpoint/CheckpointStats.js';
import type { TaskManagerInfo } from '../jobmanager/cluster/TaskManagerRegistry.js';
import type { JobException } from '../jobmanager/jobs/Job.js';
import type { JobDetails, JobSummary } from '../jobmanager/jobs/JobViews.js';
import { submitSchema, type SubmitBody } from '../jobmanager/submission/SubmitBody.js';
import type { JobState } from '../lifecycle/JobState.js';
import { JOBMANAGER_ROUTES, route, type NoParams, type TaskManagerStatus } from '../rpc/ControlPlane.js';

/**
 * The JobManager's public REST API: every route a user, the CLI, the tests or the web UI
 * calls, written once here with its body schema, its success status, its answer type and
 * the codes of its refusals. The JobManager serves each from its entry (jobmanager/routes/,
 * through `serve`); the CLI and the tests call them through RestClient; the UI through
 * the copy `scripts/build-ui.mjs` writes to `dist/ui/api.js` (BrowserApi.ts). Every
 * refusal is `{"code", "error"}` (rpc/RestErrors.ts); a body its schema refuses is a
 * 400 SPW_ERR_BAD_REQUEST, a missing or wrong token a 401 SPW_ERR_UNAUTHORIZED, and on a
 * standby JobManager every route but /overview, /healthz and /metrics a 307 to the leader
 * (503 SPW_ERR_NO_LEADER while none leads).
 */

/** The body of POST /jobs/:id/savepoints and /stop: the folder the savepoint goes into. */
export interface SavepointBody {
  directory: string;
}

const savepointSchema = {
  type: 'object',
  required: ['directory'],
  properties: { directory: { type: 'string', minLength: 1 } },
  additionalProperties: false,
} as const;

/** The body of POST /sql. */
export interface SqlBody {
  statements: string;
  /** Where a CREATE FUNCTION's relative module path is read from (the client's working folder); the JobManager's own otherwise. */
  baseDir?: string;
  /** Settings as SET gives them, before the statements' own. */
  settings?: Record<string, string>;
}

const sqlSchema = {
  type: 'object',
  required: ['statements'],
  properties: {
    statements: { type: 'string', minLength: 1 },
    baseDir: { type: 'string', minLength: 1 },
    settings: { type: 'object', additionalProperties: { type: 'string' } },
  },
  additionalProperties: false,
} as const;

/** One SQL statement's answer: a message, a table, or the id of the job it submitted. */
export type SqlAnswer =
  | { statement: string; kind: 'ok'; message: string }
  | { statement: string; kind: 'table'; columns: string[]; rows: unknown[][] }
  | { statement: string; kind: 'job'; id: string; columns: string[]; updating: boolean; bounded: boolean; plan: string[] };

/** GET /overview: the cluster's slots and jobs by state, the built-in jobs, and who leads. */
export interface Overview {
  taskmanagers: number;
  slots: number;
  freeSlots: number;
  /** Jobs by state, the state in lower case. */
  jobs: Record<string, number>;
  builtinJobs: string[];
  role: 'leader' | 'standby';
  /** The leader as this JobManager knows it (itself at epoch 0 without HA); null while none is known. */
  leader: LeaderInfo | null;
}

/** GET /jobs/:id/savepoints/:sid. */
export interface SavepointStatus {
  id: number;
  status: string;
  path?: string;
  failure?: string;
  /** Of a savepoint an earlier leader was taking when it lost the lead: SPW_ERR_LEADER_CHANGED. */
  code?: string;
  triggered?: number;
  completed?: number;
}

/** The answer to a savepoint asked for: its id, and where its status is read. */
export interface SavepointAsked {
  id: number;
  location: string;
}

/** A 409 for a job in the wrong state carries the state beside the code. */
const JOB = ['SPW_ERR_JOB_NOT_FOUND'] as const satisfies readonly ErrorCode[];

const submitErrors = [
  'SPW_ERR_UNKNOWN_JOB',
  'SPW_ERR_MODULE',
  'SPW_ERR_MODULE_NOT_FOUND',
  'SPW_ERR_INVALID_JOB',
  'SPW_ERR_INVALID_PARAM',
  'SPW_ERR_UNKNOWN_PARTITION_TYPE',
  'SPW_ERR_UNBOUNDED_JOB',
  'SPW_ERR_COMPRESSION',
  'SPW_ERR_CHECKPOINT_CONFIG',
  'SPW_ERR_SAVEPOINT_MISMATCH',
  'SPW_ERR_RESTORE',
  'SPW_ERR_NO_LEADER',
] as const satisfies readonly ErrorCode[];

const sqlErrors = [
  'SPW_ERR_SQL_SYNTAX',
  'SPW_ERR_SQL_TYPE',
  'SPW_ERR_SQL_UNKNOWN_COLUMN',
  'SPW_ERR_SQL_UNKNOWN_FUNCTION',
  'SPW_ERR_SQL_UNKNOWN_TABLE',
  'SPW_ERR_SQL_UNSUPPORTED',
  ...submitErrors,
] as const satisfies readonly ErrorCode[];

type JobParams = { id: string };

/** POST /jobs/:id/savepoints and /stop: a savepoint asked for, answered 202 with where its status is read. */
function savepointRoute(path: string) {
  return route<JobParams, SavepointBody, SavepointAsked>({
    method: 'POST',
    path,
    bodySchema: savepointSchema,
    status: 202,
    errors: [...JOB, 'SPW_ERR_JOB_ENDED', 'SPW_ERR_JOB_RESTARTING', 'SPW_ERR_CHECKPOINT_CONFIG'],
  });
}

/** The public routes of the JobManager, by the name the client calls them by. */
export const REST_ROUTES = {
  /** Submits a job: a built-in by name or an uploaded module by hash; 202 once it is stored, its state CREATED. */
  submit: route<NoParams, SubmitBody, { id: string }>({ method: 'POST', path: '/jobs', bodySchema: submitSchema, status: 202, errors: submitErrors }),
  /** Every job answered for, oldest first. */
  jobs: route<NoParams, undefined, { jobs: JobSummary[] }>({ method: 'GET', path: '/jobs' }),
  /** One job as it stands, or as it ended. */
  job: route<JobParams, undefined, JobDetails>({ method: 'GET', path: '/jobs/:id', errors: JOB }),
  /** Every failed attempt of a job, oldest first, each with its code. */
  exceptions: route<JobParams, undefined, { exceptions: JobException[] }>({ method: 'GET', path: '/jobs/:id/exceptions', errors: JOB }),
  /**
   * A FINISHED job's collected records (409 with its state before; 410 once dropped); with
   * `follow=true`, newline-delimited JSON of the records as they come, until the job ends.
   */
  result: route<JobParams, undefined, { id: string; records: unknown[] }, { follow?: 'true' }>({
    method: 'GET',
    path: '/jobs/:id/result',
    errors: [...JOB, 'SPW_ERR_JOB_NOT_FINISHED', 'SPW_ERR_RESULTS_DROPPED'],
  }),
  /** A job's checkpoints: counts, the latest, and each one's figures. */
  checkpoints: route<JobParams, undefined, { id: string } & CheckpointsView>({ method: 'GET', path: '/jobs/:id/checkpoints', errors: JOB }),
  /** Takes a savepoint of a running job into `directory` (409 once it ended); the job goes on. */
  savepoint: savepointRoute('/jobs/:id/savepoints'),
  /** As `savepoint`, and the job then stops: it FINISHES with everything read before it committed. */
  stop: savepointRoute('/jobs/:id/stop'),
  /** A savepoint's status: IN_PROGRESS, COMPLETED with its path, or FAILED with why. */
  savepointStatus: route<{ id: string; sid: string }, undefined, SavepointStatus>({ method: 'GET', path: '/jobs/:id/savepoints/:sid', errors: [...JOB, 'SPW_ERR_SAVEPOINT_NOT_FOUND'] }),
  /** Cancels a job (409 once it ended); answered with its state then. */
  cancel: route<JobParams, Record<string, never>, { id: string; state: JobState }>({ method: 'POST', path: '/jobs/:id/cancel', errors: [...JOB, 'SPW_ERR_JOB_ENDED'] }),
  /** The cluster at a glance, and who leads (a standby answers it itself). */
  overview: route<NoParams, undefined, Overview>({ method: 'GET', path: '/overview' }),
  /** The TaskManagers registered now. */
  taskManagers: route<NoParams, undefined, { taskmanagers: TaskManagerInfo[] }>({ method: 'GET', path: '/taskmanagers' }),
  /** A TaskManager as registered, with what it holds now (or why it could not say). */
  taskManager: route<{ id: string }, undefined, TaskManagerInfo & { status: TaskManagerStatus | { error: string } }>({
    method: 'GET',
    path: '/taskmanagers/:id',
    errors: ['SPW_ERR_TASKMANAGER_NOT_FOUND'],
  }),
  /** Prometheus text of the JobManager's series (a standby answers it itself). */
  metrics: route<NoParams, undefined, string>({ method: 'GET', path: '/metrics' }),
  /** Uploads a job module's JavaScript; 201 with its hash, to submit it by. */
  uploadModule: route<NoParams, string, { hash: string }>({
    method: 'POST',
    path: '/modules',
    contentType: 'text/javascript',
    status: 201,
    errors: ['SPW_ERR_MODULE', 'SPW_ERR_MODULE_TOO_LARGE'],
  }),
  /** An uploaded module's source (also how TaskManagers fetch it: the control plane's entry). */
  moduleSource: JOBMANAGER_ROUTES.moduleSource,
  /** Runs Flink SQL statements in order; a SQL error in any answers 400 with its code, line and column, and nothing runs. */
  sql: route<NoParams, SqlBody, { results: SqlAnswer[] }>({ method: 'POST', path: '/sql', bodySchema: sqlSchema, errors: sqlErrors }),
  /** Whether the process serves (public, as /ui/ and /). */
  healthz: route<NoParams, undefined, { status: 'ok' }>({ method: 'GET', path: '/healthz' }),
} as const;

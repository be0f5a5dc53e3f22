/**
 * Every error a user can see carries a code from this catalogue (fastify's
 * `lib/errors.js` is the model): the code, the HTTP status a REST answer gives it,
 * and what it means. REST error bodies are `{"code", "error"}`; a task's failure
 * crosses threads and processes as a SerializedError; tests assert codes, not prose.
 * docs/errors.md's table is checked against this catalogue (test/unit/docs.test.ts).
 *
 * Sections by where the error is raised; add a code to its section, with its meaning.
 */
export interface ErrorSpec {
  /** The HTTP status of a REST answer that carries it. */
  status: number;
  /** What it means, for docs/errors.md's table: a sentence. */
  meaning: string;
}

export const ERRORS = {
  // The job a user wrote.
  SPW_ERR_INVALID_JOB: { status: 400, meaning: 'the job definition breaks a rule (graph, operator, source, sink or parallelism); the message names it' },
  SPW_ERR_INVALID_PARAM: { status: 400, meaning: 'a job parameter is missing or not of the type the job wants' },
  SPW_ERR_UNKNOWN_JOB: { status: 400, meaning: 'no built-in job has that name' },
  SPW_ERR_MODULE: { status: 400, meaning: 'a job module could not be loaded or did not define a job (syntax error, throw, time or heap limit)' },
  SPW_ERR_MODULE_NOT_FOUND: { status: 404, meaning: 'no uploaded module has that hash' },
  SPW_ERR_MODULE_TOO_LARGE: { status: 413, meaning: "a module upload is larger than the JobManager's --max-module-size" },
  SPW_ERR_UNKNOWN_PARTITION_TYPE: { status: 400, meaning: 'an exchange names a partition type no process registered' },
  SPW_ERR_COLLECT_LIMIT: { status: 500, meaning: 'a collect sink was given more records than it holds; give the job an output folder' },
  SPW_ERR_USER_CODE: { status: 500, meaning: "the job's own code threw while a task ran it, or gave an answer out of range (a custom partitioner's channel)" },
  SPW_ERR_UNBOUNDED_JOB: { status: 400, meaning: 'an unbounded job (one that reads an unbounded source) has an edge that is not pipelined, or an operator that gives out its records only when its input ends' },

  // SQL statements (src/sql/).
  SPW_ERR_SQL_SYNTAX: { status: 400, meaning: 'a SQL statement does not parse; the message gives its line and column with a caret under the place' },
  SPW_ERR_SQL_UNKNOWN_TABLE: { status: 400, meaning: 'a SQL statement names a table or view the catalogue does not hold' },
  SPW_ERR_SQL_UNKNOWN_COLUMN: { status: 400, meaning: 'a SQL expression names a column its tables do not have' },
  SPW_ERR_SQL_UNKNOWN_FUNCTION: { status: 400, meaning: 'a SQL expression calls a function that is neither built in nor created' },
  SPW_ERR_SQL_TYPE: { status: 400, meaning: 'a SQL expression or option is of a type that does not fit where it stands' },
  SPW_ERR_SQL_UNSUPPORTED: { status: 400, meaning: 'a SQL construct that Spillway does not plan (yet), or an updating result into an append-only sink' },

  // The REST API.
  SPW_ERR_BAD_REQUEST: { status: 400, meaning: 'a request body, query or parameter is not of the form the route takes' },
  SPW_ERR_NOT_FOUND: { status: 404, meaning: 'no route has that method and path' },
  SPW_ERR_JOB_NOT_FOUND: { status: 404, meaning: 'no job has that id (or it was forgotten past --job-history)' },
  SPW_ERR_TASKMANAGER_NOT_FOUND: { status: 404, meaning: 'no registered TaskManager has that id (or it registered with an earlier JobManager)' },
  SPW_ERR_JOB_NOT_FINISHED: { status: 409, meaning: 'the result of a job that has not finished was asked for' },
  SPW_ERR_JOB_ENDED: { status: 409, meaning: 'a job that has ended already was asked to cancel' },
  SPW_ERR_RESULTS_DROPPED: { status: 410, meaning: "a job's collected results were dropped past --history-bytes" },
  SPW_ERR_UNAUTHORIZED: { status: 401, meaning: 'the request carries no cluster secret, or a wrong one' },
  SPW_ERR_AUTH_RATE_LIMITED: { status: 429, meaning: 'too many failed authentications from one address in a minute' },
  SPW_ERR_TASK_DEPLOYED: { status: 409, meaning: 'a task attempt was deployed twice to one TaskManager' },
  SPW_ERR_JOB_RESTARTING: { status: 409, meaning: 'a savepoint or stop was asked of a job while it restarts; ask again once it runs' },
  SPW_ERR_SAVEPOINT_NOT_FOUND: { status: 404, meaning: 'no savepoint of that job has that id, or no savepoint is at that path' },
  SPW_ERR_SAVEPOINT_MISMATCH: { status: 400, meaning: "a savepoint's topology (stages, operator kinds and names, key groups) differs from the job restored from it; the message says what changed" },
  SPW_ERR_RESTORE: { status: 400, meaning: 'a job cannot be restored from its checkpoint or savepoint as asked (a source that cannot be rescaled, a parallelism past the max parallelism)' },
  SPW_ERR_CHECKPOINT_CONFIG: { status: 400, meaning: "a job's checkpoint options are out of range, or no checkpoint directory is set (--checkpoint-dir, or the job's own)" },
  SPW_ERR_SPLIT_REQUEST: { status: 409, meaning: 'a task attempt that no longer runs asked for splits' },

  // The JobManager running a job.
  SPW_ERR_NO_SLOTS: { status: 500, meaning: 'a job waited --slot-timeout for free slots, or could not restart for lack of them' },
  SPW_ERR_TASK_FAILED: { status: 500, meaning: 'a task failed; the exception names the task, its attempt and its TaskManager' },
  SPW_ERR_TASKMANAGER_LOST: { status: 500, meaning: 'a TaskManager stopped answering, stopped, or lost its connections while it ran tasks' },
  SPW_ERR_NO_RESTART_LEFT: { status: 500, meaning: "a job failed and its restart strategy allows no further restart" },
  SPW_ERR_JOBMANAGER_RESTARTED: { status: 500, meaning: 'the JobManager restarted while the job ran' },
  SPW_ERR_CHECKPOINT_FAILED: { status: 500, meaning: "more of a job's checkpoints in a row failed (declined, timed out) than its tolerableFailures allow" },
  SPW_ERR_CHECKPOINT_CORRUPT: { status: 500, meaning: "a checkpoint's state file or metadata is missing or damaged (its checksum differs); an older retained checkpoint is tried" },
  SPW_ERR_CHECKPOINT_IO: { status: 500, meaning: "a checkpoint's state file or metadata could not be written to its directory" },
  SPW_ERR_CHECKPOINT_DECLINED: { status: 500, meaning: 'a task could not take part in a checkpoint (a newer one subsumed it, an input ended, its state could not be packed); the checkpoint is aborted' },
  SPW_ERR_COMMIT: { status: 500, meaning: "a sink's output could not be committed when its job finished" },
  SPW_ERR_ILLEGAL_STATE_TRANSITION: { status: 500, meaning: 'a job or task was moved between two states its state machine does not join (a bug)' },

  // A TaskManager running tasks.
  SPW_ERR_TASK_CANCELED: { status: 500, meaning: 'a task was canceled (its job was canceled, failed or restarts)' },
  SPW_ERR_TASK_THREAD: { status: 500, meaning: 'a task thread died: out of --task-heap, exited, or terminated past --cancel-timeout' },
  SPW_ERR_INSUFFICIENT_NETWORK_MEMORY: { status: 500, meaning: "a task's minimum network buffers do not fit the TaskManager's --memory" },
  SPW_ERR_INSUFFICIENT_MANAGED_MEMORY: { status: 500, meaning: "the TaskManager's --managed-memory is too small for its slots" },
  SPW_ERR_STATE_TOO_LARGE: { status: 500, meaning: "a task's keyed state (windows, process state, timers) outgrew its operator's share of --managed-memory" },
  SPW_ERR_SPILL_MISSING: { status: 500, meaning: 'a spill file of a sort, aggregation or join is gone' },
  SPW_ERR_SPILL_CORRUPT: { status: 500, meaning: 'a spill file of a sort, aggregation or join is damaged' },
  SPW_ERR_SINK_IO: { status: 500, meaning: 'a sink could not create its folder, open or write its file, or could not reach or write to its service (Redis, PostgreSQL: the message names it and its URL)' },
  SPW_ERR_INVALID_KEY: { status: 500, meaning: 'a key selector gave a key that cannot be hashed, a symbol or a function (a key is a string, number, bigint, boolean, null, byte array, or an array or plain object of them)' },
  SPW_ERR_SINK_RECORD: { status: 500, meaning: 'a sink was given a record it cannot write: a Redis stream entry needs an object of one field or more, a PostgreSQL row an object of its columns' },
  SPW_ERR_SOURCE_IO: { status: 500, meaning: 'a source could not list or read its input, or could not reach or query its service (Redis, PostgreSQL: the message names it and its URL)' },
  SPW_ERR_MALFORMED_INPUT: { status: 422, meaning: 'an input file is malformed (a JSON line, a CSV quote or field, a Parquet footer or row group, a gzip or zstd stream); the message names the file and the line, row group or byte offset' },
  SPW_ERR_NO_LEADER: { status: 503, meaning: 'no JobManager of the cluster leads now (a leader change is under way): try again after Retry-After, or at another --jobmanager URL' },
  SPW_ERR_FENCED: { status: 409, meaning: "an act of a JobManager whose leadership ended (its epoch is older than the cluster's) was refused: it completes no checkpoint, commits nothing, deploys nothing" },
  SPW_ERR_HA_STORE: { status: 503, meaning: 'the HA store (PostgreSQL of --ha) could not be reached or failed; a leader that cannot renew its lease steps down' },
  SPW_ERR_LEADER_CHANGED: { status: 500, meaning: 'the leading JobManager changed while a savepoint was under way: ask for it again of the new leader' },
  SPW_ERR_CONTROL_CALL: { status: 502, meaning: 'a control-plane call (command line to JobManager, JobManager to TaskManager or back) failed: unreachable, timed out, or answered with an error' },

  // The data plane.
  SPW_ERR_PARTITION_RELEASED: { status: 500, meaning: 'a partition was released (its producer failed or its job ended) while read' },
  SPW_ERR_PARTITION_NOT_FOUND: { status: 500, meaning: 'a consumer asked for a partition its TaskManager does not have' },
  SPW_ERR_PARTITION_IO: { status: 500, meaning: 'a blocking, sort-merge or hybrid partition could not write or read its file' },
  SPW_ERR_CORRUPT_PARTITION_FILE: { status: 500, meaning: "a blocking, sort-merge or hybrid partition's file is damaged or truncated" },
  SPW_ERR_UNSERIALIZABLE_RECORD: { status: 500, meaning: 'a record cannot be sent to the next task: msgpack does not carry it (a symbol, an integer wider than 64 bits, a cycle), or its batch packs into more than 1 GiB' },
  SPW_ERR_CORRUPT_FRAME: { status: 500, meaning: 'a data connection carried a frame, buffer or record that does not decode' },
  SPW_ERR_CONNECTION_LOST: { status: 500, meaning: 'a data connection to a peer TaskManager was refused, reset or closed' },
  SPW_ERR_DATA_AUTH: { status: 500, meaning: "a data connection's peer failed the handshake keyed by the cluster secret" },
  SPW_ERR_COMPRESSION: { status: 400, meaning: 'an unknown compression codec, or a compressed buffer that does not decompress' },

  // Processes and their configuration.
  SPW_ERR_CONFIG: { status: 400, meaning: 'a setting of a process is missing or out of range (secret, TLS files, host, memory, buffer size), or a --partition-type module does not load or does not export partition types' },
  SPW_ERR_USAGE: { status: 400, meaning: 'a command line names an unknown command or option, or gives an option a bad value' },
  SPW_ERR_PROCESS: { status: 500, meaning: 'a process of a local cluster could not start or stopped' },
  SPW_ERR_INTERNAL: { status: 500, meaning: 'an internal check failed, or an error came without a code of its own (a bug: please report it)' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * An error with a code from the catalogue. `status` is the code's HTTP status;
 * `cause` (ES2022) keeps the error it wraps.
 */
// eslint-disable-next-line no-restricted-syntax -- the catalogue's base class: a coded error is an Error for stacks, `cause` and `instanceof Error`.
export class SpillwayError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SpillwayError';
  }

  get status(): number {
    return ERRORS[this.code].status;
  }
}

/** A coded error as it crosses a thread or a process: plain data. */
export interface SerializedError {
  code: ErrorCode;
  message: string;
}

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERRORS, code);
}

/** The code of any thrown value: its own if it carries a catalogued one, else `fallback`. */
export function codeOf(error: unknown, fallback: ErrorCode = 'SPW_ERR_INTERNAL'): ErrorCode {
  const code = (error as { code?: unknown } | null)?.code;
  return isErrorCode(code) ? code : fallback;
}

/** Any thrown value as data that keeps its code (`fallback` for one without). */
export function serializeError(error: unknown, fallback: ErrorCode = 'SPW_ERR_INTERNAL'): SerializedError {
  return { code: codeOf(error, fallback), message: error instanceof Error ? error.message : String(error) };
}

/** A serialized error made an error again, its code kept. */
export function deserializeError(error: SerializedError): SpillwayError {
  return new SpillwayError(error.code, error.message);
}

/** The body of a REST error answer. */
export function errorBody(error: SerializedError): { code: ErrorCode; error: string } {
  return { code: error.code, error: error.message };
}

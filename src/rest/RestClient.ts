import { pathOf, type NoParams } from '../rpc/ControlPlane.js';
import { callRoute, streamLines } from '../rpc/HttpClient.js';
import type { SubmitBody } from '../jobmanager/submission/SubmitBody.js';
import { REST_ROUTES as REST, type SqlBody } from './RestApi.js';

const NONE: NoParams = {};

/** `timeoutMs`: how long a call may take (the HTTP client's default, 30 s, unless given). */
type CallOptions = { timeoutMs?: number };

/**
 * A JobManager's public REST API as the CLI and the tests call it: one method a route of
 * REST_ROUTES, each typed by its entry. Each resolves with the answer, or rejects with an
 * HttpError (a refusal, with the server's code and status) or SPW_ERR_CONTROL_CALL
 * (unreachable); none retries. A standby's 307 is followed to the leader.
 */
export class RestClient {
  /** `url`: the JobManager's base URL; a trailing slash is dropped. */
  constructor(url: string) {
    this.url = url.replace(/\/$/, '');
  }

  readonly url: string;

  /** Submits a job; its id. */
  async submit(body: SubmitBody): Promise<string> {
    return (await callRoute(this.url, REST.submit, { params: NONE, body })).id;
  }

  /** Uploads a job module's JavaScript; its hash, to submit it by. */
  async uploadModule(source: string): Promise<string> {
    return (await callRoute(this.url, REST.uploadModule, { params: NONE, body: source })).hash;
  }

  /** Every job answered for, oldest first. */
  jobs() {
    return callRoute(this.url, REST.jobs, { params: NONE });
  }

  /** A job as it stands, or as it ended; SPW_ERR_JOB_NOT_FOUND (404) if the JobManager knows none of that id. */
  job(id: string) {
    return callRoute(this.url, REST.job, { params: { id } });
  }

  /** A job's failed attempts, oldest first. */
  exceptions(id: string) {
    return callRoute(this.url, REST.exceptions, { params: { id } });
  }

  /** A FINISHED job's collected records. */
  async result<T = unknown>(id: string): Promise<T[]> {
    return (await callRoute(this.url, REST.result, { params: { id } })).records as T[];
  }

  /** Where a job's result is read: what `submit --wait` prints. */
  resultUrl(id: string): string {
    return `${this.url}${pathOf(REST.result, { id })}`;
  }

  /** A job's collected records as they come, each given to `onRecord`; resolves when the job has ended. */
  followResult(id: string, onRecord: (record: unknown) => void): Promise<void> {
    return streamLines(`${this.url}${pathOf(REST.result, { id }, { follow: 'true' })}`, onRecord);
  }

  /** A job's checkpoints: counts, the latest completed, each one's figures. */
  checkpoints(id: string) {
    return callRoute(this.url, REST.checkpoints, { params: { id } });
  }

  /** Asks for a savepoint of a running job into `directory` (`stop`: and stops the job then). */
  savepoint(id: string, directory: string, stop = false) {
    return callRoute(this.url, stop ? REST.stop : REST.savepoint, { params: { id }, body: { directory } });
  }

  /** A savepoint's status: IN_PROGRESS, COMPLETED with its path, or FAILED with why. */
  savepointStatus(id: string, savepoint: number) {
    return callRoute(this.url, REST.savepointStatus, { params: { id, sid: String(savepoint) } });
  }

  /** Cancels a job; its state then. SPW_ERR_JOB_ENDED (409) once it ended. */
  cancel(id: string) {
    return callRoute(this.url, REST.cancel, { params: { id }, body: {} });
  }

  /** The cluster at a glance, and who leads. */
  overview(options: CallOptions = {}) {
    return callRoute(this.url, REST.overview, { params: NONE }, options);
  }

  /** The TaskManagers registered now. */
  async taskManagers() {
    return (await callRoute(this.url, REST.taskManagers, { params: NONE })).taskmanagers;
  }

  /** A TaskManager as registered, with what it holds now. */
  taskManager(id: string) {
    return callRoute(this.url, REST.taskManager, { params: { id } });
  }

  /** Runs SQL statements in order; each one's answer. */
  async sql(body: SqlBody, options: CallOptions = {}) {
    return (await callRoute(this.url, REST.sql, { params: NONE, body }, options)).results;
  }

  /** Resolves if the JobManager serves. */
  healthz(options: CallOptions = {}) {
    return callRoute(this.url, REST.healthz, { params: NONE }, options);
  }
}

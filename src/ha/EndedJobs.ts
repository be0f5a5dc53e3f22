import type { JobRecord } from '../jobmanager/store/JobStore.js';
import { jobSeq } from '../jobmanager/jobs/JobViews.js';
import { emptyCounters } from '../rpc/TaskDeployment.js';
import type { HaServices, JobResult } from './HaServices.js';

/** Why GET /jobs/:id/result has nothing for a job another JobManager ended: it kept the collected records in its own data dir. */
const RESULTS_ELSEWHERE = 'the job ended under an earlier leader, which kept its collected records in its own data dir';

/**
 * The jobs of the cluster that ended, as the job result store has them: a leader lists
 * them all, those that ended under an earlier leader too, with their final state. Its
 * own data dir may know such a job only as it last saw it (FAILED "JobManager
 * restarted" while another leader ran it on): the store's record is the truth then.
 */
export class EndedJobs {
  private records = new Map<string, JobRecord>();

  /** Loads the `limit` jobs of the cluster that ended last. */
  async load(ha: HaServices, limit: number): Promise<void> {
    const results = await ha.results(limit);
    this.records = new Map(results.map((result) => [result.jobId, recordOf(result)]));
  }

  /** A job that ended under this leader. */
  add(result: JobResult): void {
    this.records.set(result.jobId, recordOf(result));
  }

  /** The job as it ended: the local record when it ended the same way here (it has the collected records), else the store's. */
  resolve(id: string, local: JobRecord | undefined): JobRecord | undefined {
    const ended = this.records.get(id);
    return ended === undefined || (local !== undefined && local.state === ended.state) ? local : ended;
  }

  /** The ended jobs the local data dir does not keep. */
  missingFrom(local: ReadonlySet<string>): JobRecord[] {
    return [...this.records.values()].filter((record) => !local.has(record.id));
  }
}

/** The record a result carries; for one without (the job could not even be loaded), the little the result says. */
function recordOf(result: JobResult): JobRecord {
  const record = result.record ?? {
    seq: jobSeq(result.jobId) ?? 0,
    id: result.jobId,
    name: '',
    state: result.state as JobRecord['state'],
    errorCode: result.errorCode,
    parallelism: 0,
    exchange: 'pipelined',
    submitted: result.ended,
    ended: result.ended,
    ref: { params: {} },
    counters: emptyCounters(),
    tasks: [],
    resultBytes: 0,
  };
  return record.resultBytes === 0 ? record : { ...record, resultsDropped: RESULTS_ELSEWHERE };
}

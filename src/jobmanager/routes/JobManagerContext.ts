import type { CatalogSnapshot } from '../../sql/Catalog.js';
import type { LeaderInfo } from '../../ha/LeaderInfo.js';
import type { JobRecord } from '../store/JobStore.js';
import type { SubmitBody } from '../submission/SubmitBody.js';
import type { JobHistory } from '../store/JobHistory.js';
import type { JobManagerMetrics } from '../JobManagerMetrics.js';
import type { JobSubmitter } from '../submission/JobSubmitter.js';
import type { Modules } from '../submission/Modules.js';
import type { Scheduler } from '../scheduler/Scheduler.js';
import type { TaskManagerRegistry } from '../cluster/TaskManagerRegistry.js';

/**
 * What the JobManager's route plugins serve from. The parts made once the data dir is
 * known (history, scheduler, modules, submitter) are functions, called when a request
 * comes: none comes before they are made.
 */
export interface JobManagerContext {
  /** This JobManager process: TaskManagers that registered with an earlier one must register again. */
  readonly session: string;
  readonly registry: TaskManagerRegistry;
  readonly metrics: JobManagerMetrics;
  history(): JobHistory;
  scheduler(): Scheduler;
  modules(): Modules;
  submitter(): JobSubmitter;
  /** The largest module upload, bytes. */
  readonly maxModuleBytes: number;
  /** A live job as it stands, or a kept one as it ended; SPW_ERR_JOB_NOT_FOUND otherwise. */
  job(id: string): JobRecord;
  /** Every job answered for, by number; live ones as they stand. */
  jobs(): JobRecord[];
  /** The SQL catalogue in the store, so that a restarted JobManager keeps it. */
  sqlCatalog(): { load(): CatalogSnapshot | undefined; save(snapshot: CatalogSnapshot): Promise<void> };
  /** Submits a job (stored in the HA store first, with HA); its id. */
  submit(body: SubmitBody): Promise<string>;
  /**
   * With HA, a savepoint asked of an earlier leader: COMPLETED if the HA store has it,
   * FAILED with SPW_ERR_LEADER_CHANGED if it was under way when the leader changed.
   */
  savepointOfEarlierLeader(jobId: string, id: number): Promise<{ status: string; path?: string; failure?: string; code?: string } | undefined>;
  /** Who leads, for GET /overview: this JobManager's role, and the leader as known. */
  leadership(): { role: 'leader' | 'standby'; leader: LeaderInfo | null };
}

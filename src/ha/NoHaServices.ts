import { SpillwayError } from '../errors/Errors.js';
import type { CheckpointPointer, HaServices, JobResult, StoredJob } from './HaServices.js';

/**
 * No HA (`--ha` absent): one JobManager, which leads alone at epoch 0 and keeps its
 * state in its own data dir, as before HA existed. Nothing is shared, so a new leader
 * never has anything to load; job numbers come from the JobManager's own store.
 */
export class NoHaServices implements HaServices {
  readonly kind = 'none';
  readonly election = null;

  nextJobSeq(): Promise<number> {
    return Promise.reject(new SpillwayError('SPW_ERR_HA_STORE', "without HA the cluster numbers no jobs: the JobManager's history does"));
  }

  async putJob(_epoch: number, _job: StoredJob): Promise<void> {}

  async unfinishedJobs(): Promise<StoredJob[]> {
    return [];
  }

  async putModule(_hash: string, _source: string): Promise<void> {}

  async module(_hash: string): Promise<string | undefined> {
    return undefined;
  }

  async addCheckpoint(_epoch: number, _pointer: CheckpointPointer): Promise<void> {}

  async checkpoints(_jobId: string): Promise<CheckpointPointer[]> {
    return [];
  }

  async removeCheckpoint(_jobId: string, _id: number): Promise<void> {}

  async putResult(_epoch: number, _result: JobResult): Promise<void> {}

  async result(_jobId: string): Promise<JobResult | undefined> {
    return undefined;
  }

  async results(_limit: number): Promise<JobResult[]> {
    return [];
  }

  async close(): Promise<void> {}
}

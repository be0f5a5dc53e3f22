import { CheckpointStatus, type CheckpointsView, type CheckpointStats } from '../../src/jobmanager/checkpoint/CheckpointStats.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { eventually } from './eventually.js';

/** GET /jobs/:id/checkpoints. */
export async function checkpointsOf(url: string, id: string): Promise<CheckpointsView> {
  return callJson<CheckpointsView>('GET', `${url}/jobs/${id}/checkpoints`);
}

/** A job's first completed checkpoint for which `test` holds, as GET /jobs/:id/checkpoints shows it. */
export function completedCheckpoint(url: string, id: string, test: (checkpoint: CheckpointStats) => boolean = () => true): Promise<CheckpointStats> {
  return eventually(`a completed checkpoint of job ${id} as asked`, async () => (await checkpointsOf(url, id)).checkpoints.find((c) => c.status === CheckpointStatus.COMPLETED && test(c)));
}

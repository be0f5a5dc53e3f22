import { CheckpointStatus, type CheckpointsView, type CheckpointStats } from '../../src/jobmanager/checkpoint/CheckpointStats.js';
import { RestClient } from '../../src/rest/RestClient.js';
import { eventually } from './eventually.js';

/** GET /jobs/:id/checkpoints. */
export async function checkpointsOf(url: string, id: string): Promise<CheckpointsView> {
  return new RestClient(url).checkpoints(id);
}

/** A job's first completed checkpoint for which `test` holds, as GET /jobs/:id/checkpoints shows it. */
export function completedCheckpoint(url: string, id: string, test: (checkpoint: CheckpointStats) => boolean = () => true): Promise<CheckpointStats> {
  return eventually(`a completed checkpoint of job ${id} as asked`, async () => (await checkpointsOf(url, id)).checkpoints.find((c) => c.status === CheckpointStatus.COMPLETED && test(c)));
}

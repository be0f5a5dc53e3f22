import { CheckpointStatus, type CheckpointsView, type CheckpointStats } from '../../src/jobmanager/checkpoint/CheckpointStats.js';
import { callJson } from '../../src/rpc/HttpClient.js';
import { sleep } from './jobs.js';

/** GET /jobs/:id/checkpoints. */
export async function checkpointsOf(url: string, id: string): Promise<CheckpointsView> {
  return callJson<CheckpointsView>('GET', `${url}/jobs/${id}/checkpoints`);
}

/** Polls `probe` until it gives something other than undefined; throws, saying what was awaited, after `timeoutMs`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`not seen after ${timeoutMs} ms: ${what}`);
    await sleep(50);
  }
}

/** A job's first completed checkpoint for which `test` holds, as GET /jobs/:id/checkpoints shows it. */
export function completedCheckpoint(url: string, id: string, test: (checkpoint: CheckpointStats) => boolean = () => true): Promise<CheckpointStats> {
  return eventually(`a completed checkpoint of job ${id} as asked`, async () => (await checkpointsOf(url, id)).checkpoints.find((c) => c.status === CheckpointStatus.COMPLETED && test(c)));
}

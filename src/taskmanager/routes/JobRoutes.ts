import type { FastifyInstance } from 'fastify';
import { SpillwayError } from '../../errors/Errors.js';
import { log } from '../../Logger.js';
import { TASKMANAGER_ROUTES as ROUTES } from '../../rpc/ControlPlane.js';
import { serve } from '../../rpc/RouteServer.js';
import type { TaskManagerContext } from './TaskManagerContext.js';

/** A job's messages to every task of it here: a checkpoint completed or aborted, cancel them all, release its partitions. */
export async function jobRoutes(http: FastifyInstance, context: TaskManagerContext): Promise<void> {
  serve(http, ROUTES.notifyCheckpoint, async ({ params: { jobId, id }, body: { completed } }) => {
    const checkpointId = Number(id);
    for (const task of context.tasks.values()) {
      if (task.descriptor.jobId === jobId) task.checkpoint(completed ? { type: 'complete', id: checkpointId } : { type: 'abort', id: checkpointId });
    }
    return {};
  });
  // Answered once the tasks have ended (within the cancel timeout): nothing of theirs writes after.
  serve(http, ROUTES.cancelJob, async ({ params: { jobId } }) => {
    context.jobCanceled(jobId);
    const tasks = [...context.tasks.values()].filter((task) => task.descriptor.jobId === jobId);
    for (const task of tasks) task.cancel();
    await Promise.all(tasks.map((task) => task.whenEnded()));
    return {};
  });
  // Without a list, every partition of the job; with one, those of restarted attempts.
  serve(http, ROUTES.releasePartitions, async ({ params: { jobId }, body }) => {
    const prefix = `${jobId}/`;
    const listed = body?.partitions ? new Set(body.partitions) : null;
    const cause = new SpillwayError('SPW_ERR_PARTITION_RELEASED', listed ? `its task of job ${jobId} restarts` : `job ${jobId} ended`);
    context.releasePartitions((id) => (listed ? listed.has(id) : id.startsWith(prefix)), cause);
    log.debug({ job: jobId, taskManager: context.id() }, 'partitions of the job released');
    return {};
  });
}

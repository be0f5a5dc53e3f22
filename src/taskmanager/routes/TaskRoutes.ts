import type { FastifyInstance } from 'fastify';
import { TASKMANAGER_ROUTES as ROUTES } from '../../rpc/ControlPlane.js';
import { serve } from '../../rpc/RouteServer.js';
import type { TaskManagerContext } from './TaskManagerContext.js';

/** One task attempt's messages: deploy it, where its inputs are, trigger its checkpoint, cancel it. */
export async function taskRoutes(http: FastifyInstance, context: TaskManagerContext): Promise<void> {
  serve(http, ROUTES.deployTask, async ({ body: descriptor }) => {
    await context.deploy(descriptor);
    return { taskId: descriptor.taskId };
  });
  serve(http, ROUTES.updatePartition, async ({ params, body: { partitionId, location } }) => {
    context.updatePartition(params.executionId, partitionId, location);
    return {};
  });
  serve(http, ROUTES.triggerCheckpoint, async ({ params, body: barrier }) => {
    context.tasks.get(params.executionId)?.checkpoint({ type: 'trigger', barrier });
    return {};
  });
  // Answered once the task has ended (within the cancel timeout): nothing of its writes after.
  serve(http, ROUTES.cancelTask, async ({ params }) => {
    const task = context.tasks.get(params.executionId);
    task?.cancel();
    await task?.whenEnded();
    return {};
  });
}
